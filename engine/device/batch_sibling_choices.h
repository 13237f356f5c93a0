// BatchSiblingChoices: the tuned choices a kernel made for one operation at
// some batch sizes, so that the same operation at another batch size adopts
// the nearest tuned size's choice instead of timing its candidates again.
//
// Why: warm-up prepares every graph bucket (12 sizes up to 64), and a
// kernel that tunes per shape would time its candidates at each of them.
// For a cuDNN graph convolution each candidate is a plan finalized (some
// compile a kernel) and run 4 times: on the 2026-11-28 H200 run, FP16
// ResNet-50 was not READY after 180 s (BENCHMARKS.md, "Served from a cold
// start"). Warm-up tunes the largest size first; the smaller ones then
// build one plan each. The choice of the largest batch is the one that
// matters for throughput; small batches may run a little slower than a
// choice tuned for them would, which the tuning cache (a later start) does
// not change: inherited choices are not recorded there.
//
// `operation` is the operation's key without its batch size (the caller
// writes it: every field but the batch). Nearest: the smallest
// |log2(batch / tuned)|, the larger size on a tie. Not thread-safe: one per
// kernel object, like the plans it sits beside.
#ifndef COALESCE_ENGINE_DEVICE_BATCH_SIBLING_CHOICES_H_
#define COALESCE_ENGINE_DEVICE_BATCH_SIBLING_CHOICES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace coalesce {

class BatchSiblingChoices {
 public:
  // Records `choice` as tuned for `operation` at `batch` (> 0), replacing
  // one recorded there before.
  void Record(const std::string& operation, int64_t batch, std::string choice);

  // The choice recorded for `operation` at the batch nearest `batch`, or
  // nullopt when none is.
  std::optional<std::string> Nearest(const std::string& operation,
                                     int64_t batch) const;

 private:
  std::map<std::string, std::map<int64_t, std::string>> tuned_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_BATCH_SIBLING_CHOICES_H_
