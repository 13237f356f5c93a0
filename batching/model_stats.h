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
  kRejected,  // not admitted or dropped from the queue: full, timed out, shutting down
  kCanceled,  // the client cancelled it
  kBackend,   // its batch failed to execute or its outputs could not be returned
  kOther,     // invalid request
};
inline constexpr int kFailureReasons = 4;

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
