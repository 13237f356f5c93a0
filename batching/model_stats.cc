#include "batching/model_stats.h"

#include <chrono>

namespace coalesce {
namespace {

void Add(DurationStat* stat, DurationHistogram* hist, Clock::Duration d) {
  const int64_t ns =
      d > Clock::Duration::zero()
          ? std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()
          : 0;
  stat->count += 1;
  stat->ns += static_cast<uint64_t>(ns);
  if (hist != nullptr) hist->Add(ns, kDurationBoundsNs);
}

uint64_t UnixMillisNow() {
  // A wall-clock label for last_inference, not a batching decision, so it
  // reads the system clock rather than the injectable steady Clock.
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace

void ModelStats::RecordSuccess(Clock::Duration queue, Clock::Duration total,
                               const BatchDurations& batch) {
  const uint64_t now_ms = UnixMillisNow();
  absl::MutexLock lock(&mu_);
  Add(&stats_.success, &stats_.success_hist, total);
  Add(&stats_.queue, &stats_.queue_hist, queue);
  Add(&stats_.compute_input, &stats_.compute_input_hist, batch.compute_input);
  Add(&stats_.compute_infer, &stats_.compute_infer_hist, batch.compute_infer);
  Add(&stats_.compute_output, &stats_.compute_output_hist,
      batch.compute_output);
  stats_.last_inference_ms = now_ms;
}

void ModelStats::RecordFailure(Clock::Duration total, FailureReason reason) {
  absl::MutexLock lock(&mu_);
  Add(&stats_.fail, nullptr, total);
  ++stats_.failures[static_cast<int>(reason)];
}

void ModelStats::RecordExecution(uint64_t batch_size,
                                 const BatchDurations& batch) {
  absl::MutexLock lock(&mu_);
  stats_.inference_count += batch_size;
  stats_.execution_count += 1;
  stats_.batch_size_hist.Add(static_cast<int64_t>(batch_size),
                             kBatchSizeBounds);
  BatchSizeStats& per_size = stats_.batch_stats[batch_size];
  Add(&per_size.compute_input, nullptr, batch.compute_input);
  Add(&per_size.compute_infer, nullptr, batch.compute_infer);
  Add(&per_size.compute_output, nullptr, batch.compute_output);
}

ModelStatsSnapshot ModelStats::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace coalesce
