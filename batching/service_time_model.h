// ServiceTimeModel: how long one batch of each size keeps an instance busy,
// learned online from the batches the executors finish. The first piece of
// issue 30's latency-target batching (docs/batching.md, "Latency target"):
// the policy predicts a batch's service time from it.
//
// Per batch size: the median of the last `window` samples. A median ignores
// the odd outlier (a page fault, a cold graph, a preempted thread), and a
// sliding window follows drift (thermal throttling, another model taking the
// device) within `window` batches of that size.
//
// A size not seen yet is predicted from the sizes that were: between two
// seen sizes, on the straight line between their medians; beyond them, on
// the line t(b) = fixed + per_row * b through every seen size's median
// (Theil-Sen: the median of the pairwise slopes and intercepts, so one badly
// measured size does not tilt it; the slope is at least 0; fitted on at
// most 48 of the seen sizes, evenly spread). With one size
// seen, others scale by rows from it; with none, there is no prediction.
//
// Not thread-safe: its owner calls it under its own lock.
#ifndef COALESCE_BATCHING_SERVICE_TIME_MODEL_H_
#define COALESCE_BATCHING_SERVICE_TIME_MODEL_H_

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "batching/clock.h"

namespace coalesce {

class ServiceTimeModel {
 public:
  // Sizes 1..max_batch_size; `window` samples kept per size.
  // REQUIRES: max_batch_size >= 1, window >= 1.
  explicit ServiceTimeModel(int max_batch_size, int window = 32);

  // A batch of `batch_size` rows took `took`. Sizes outside
  // 1..max_batch_size are ignored.
  void Record(int batch_size, Clock::Duration took);

  // The service time of a batch of `batch_size` rows; nullopt before any
  // sample, or for a size outside 1..max_batch_size.
  std::optional<Clock::Duration> Predict(int batch_size) const;

  // Predict(b) for b = 1..max_batch_size, at index b - 1, computing each
  // size's median once (Predict alone recomputes them on every call).
  std::vector<std::optional<Clock::Duration>> PredictAll() const;

  // Samples held for that size (at most `window`).
  int samples(int batch_size) const;
  int max_batch_size() const { return static_cast<int>(recent_.size()); }

 private:
  // (size, median ns) of every size seen, in increasing size.
  using Points = std::vector<std::pair<int, double>>;
  std::optional<Clock::Duration> Median(int batch_size) const;
  Points SeenMedians() const;
  // The prediction for an unseen `batch_size` from `points` (non-empty);
  // `line` is the Theil-Sen fit (fixed, per_row) through them.
  static Clock::Duration Estimate(const Points& points,
                                  std::pair<double, double> line,
                                  int batch_size);
  static std::pair<double, double> TheilSen(const Points& points);

  const size_t window_;
  std::vector<std::deque<Clock::Duration>> recent_;  // [size - 1]
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_SERVICE_TIME_MODEL_H_
