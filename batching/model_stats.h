// ModelStats: the thread-safe accumulators behind one model's statistics, and
// ModelStatsSnapshot, the plain copy the server turns into ModelStatistics.
//
// Semantics follow Triton: per-request durations (success, queue, compute_*)
// are recorded only for requests that succeeded, each request of a batch being
// charged the whole batch's compute durations; `fail` counts every request
// the batcher answered with an error, and requests Enqueue rejected.
// Per-batch counters (inference_count, execution_count, batch_stats) count
// successful executions only. All methods are thread-safe.
#ifndef COALESCE_BATCHING_MODEL_STATS_H_
#define COALESCE_BATCHING_MODEL_STATS_H_

#include <cstdint>
#include <iterator>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"

namespace coalesce {

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct BatchSizeStats {
  DurationStat compute_input, compute_infer, compute_output;
};

// Why a request failed, as Triton's nv_inference_request_failure labels it.
enum class FailureReason {
  kRejected,  // not admitted, or dropped from the queue: full, its queue
              // timeout passed (kReject policy), shutting down
  kTimedOut,  // its deadline passed while it waited
  kCanceled,  // the client cancelled it
  kBackend,  // its batch failed to execute or its outputs could not be returned
  kOther,    // invalid request
};
inline constexpr int kFailureReasons = 5;

// A histogram with fixed upper bounds: counts[i] is how many values were
// <= bounds[i] and above the bound before it; counts[N] those above all.
template <size_t N>
struct FixedHistogram {
  uint64_t counts[N + 1] = {};
  void Add(int64_t value, const int64_t (&bounds)[N]) {
    size_t i = 0;
    while (i < N && value > bounds[i]) ++i;
    ++counts[i];
  }
};

// Duration bounds, ns: 0.1 ms to 10 s, dense where batching delays and
// online SLOs (1-100 ms) lie. Fixed for every model, so histograms
// aggregate across models and pods.
inline constexpr int64_t kDurationBoundsNs[] = {
    100'000,     250'000,     500'000,       1'000'000,     2'500'000,
    5'000'000,   10'000'000,  25'000'000,    50'000'000,    100'000'000,
    250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 10'000'000'000};
inline constexpr size_t kDurationBuckets = std::size(kDurationBoundsNs);
using DurationHistogram = FixedHistogram<kDurationBuckets>;

// Executed batch sizes: powers of two to 1024.
inline constexpr int64_t kBatchSizeBounds[] = {1,  2,   4,   8,   16,  32,
                                               64, 128, 256, 512, 1024};
inline constexpr size_t kBatchSizeBuckets = std::size(kBatchSizeBounds);
using BatchSizeHistogram = FixedHistogram<kBatchSizeBuckets>;

struct ModelStatsSnapshot {
  uint64_t last_inference_ms =
      0;                         // Unix epoch ms of the last completed request.
  uint64_t inference_count = 0;  // Batch elements executed.
  uint64_t execution_count = 0;  // Batches executed.
  // Per request, Triton semantics.
  DurationStat success, fail, queue, compute_input, compute_infer,
      compute_output;
  // fail.count split by FailureReason (indexed by its value).
  uint64_t failures[kFailureReasons] = {};
  // Per successful request (counts and sums are those of success, queue,
  // compute_*): how their durations are distributed.
  DurationHistogram success_hist, queue_hist, compute_input_hist,
      compute_infer_hist, compute_output_hist;
  // Per successful execution: its batch size (sum: inference_count).
  BatchSizeHistogram batch_size_hist;
  // Per executed batch size; count = executions of that size.
  std::map<uint64_t, BatchSizeStats> batch_stats;
};

// Where one successful batch spent its time.
struct BatchDurations {
  Clock::Duration compute_input{0};   // Gather + copy in.
  Clock::Duration compute_infer{0};   // Run.
  Clock::Duration compute_output{0};  // Copy out + scatter.
};

class ModelStats {
 public:
  // One request answered OK: `queue` from enqueue to batch formation, `total`
  // from enqueue to finish, `batch` the durations of the batch it ran in.
  void RecordSuccess(Clock::Duration queue, Clock::Duration total,
                     const BatchDurations& batch);

  // One request answered with an error after `total` (0 when rejected at
  // admission), for `reason`.
  void RecordFailure(Clock::Duration total, FailureReason reason);

  // One successful execution of `batch_size` elements.
  void RecordExecution(uint64_t batch_size, const BatchDurations& batch);

  ModelStatsSnapshot Snapshot() const;

 private:
  mutable absl::Mutex mu_;
  ModelStatsSnapshot stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_MODEL_STATS_H_
