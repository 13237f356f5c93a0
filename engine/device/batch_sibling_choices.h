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
// build one plan each. Only a size at least as large is adopted from, so
// every size larger than all tuned ones is tuned itself: a model_warmup
// sample of batch 1 (run before the prepared sizes) does not decide the
// largest batch, whose choice is the one that matters for throughput.
// Small batches may run a little slower than a choice tuned for them
// would, which the tuning cache (a later start) does not change: adopted
// choices are not recorded there.
//
// `operation` is the operation's key without its batch size (the caller
// writes it: every field but the batch). Nearest: the smallest tuned size
// at or above the batch. Not thread-safe: one per kernel object, like the
// plans it sits beside.
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

  // The choice recorded for `operation` at the smallest batch at or above
  // `batch`, or nullopt when none is.
  std::optional<std::string> NearestAtLeast(const std::string& operation,
                                            int64_t batch) const;

 private:
  std::map<std::string, std::map<int64_t, std::string>> tuned_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_BATCH_SIBLING_CHOICES_H_
