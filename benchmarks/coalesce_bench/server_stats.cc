#include "benchmarks/coalesce_bench/server_stats.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace coalesce::bench {
namespace {

void Add(const inference::StatisticDuration& from, DurationTotal* to) {
  to->count += from.count();
  to->ns += from.ns();
}

bool NotBelow(const DurationTotal& after, const DurationTotal& before) {
  return after.count >= before.count && after.ns >= before.ns;
}

// Average microseconds per counted event between two totals.
double AverageUs(const DurationTotal& before, const DurationTotal& after) {
  const uint64_t count = after.count - before.count;
  if (count == 0) return 0;
  return static_cast<double>(after.ns - before.ns) / 1e3 /
         static_cast<double>(count);
}

bool Monotonic(const ServerStatsSnapshot& b, const ServerStatsSnapshot& a) {
  return a.inference_count >= b.inference_count &&
         a.execution_count >= b.execution_count &&
         NotBelow(a.success, b.success) && NotBelow(a.fail, b.fail) &&
         NotBelow(a.queue, b.queue) &&
         NotBelow(a.compute_input, b.compute_input) &&
         NotBelow(a.compute_infer, b.compute_infer) &&
         NotBelow(a.compute_output, b.compute_output);
}

}  // namespace

absl::StatusOr<ServerStatsSnapshot> SnapshotFromProto(
    const inference::ModelStatisticsResponse& response,
    const std::string& model, const std::string& version) {
  ServerStatsSnapshot total;
  bool found = false;
  for (const inference::ModelStatistics& m : response.model_stats()) {
    if (m.name() != model || (!version.empty() && m.version() != version)) {
      continue;
    }
    found = true;
    total.inference_count += m.inference_count();
    total.execution_count += m.execution_count();
    const inference::InferStatistics& s = m.inference_stats();
    Add(s.success(), &total.success);
    Add(s.fail(), &total.fail);
    Add(s.queue(), &total.queue);
    Add(s.compute_input(), &total.compute_input);
    Add(s.compute_infer(), &total.compute_infer);
    Add(s.compute_output(), &total.compute_output);
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat(
        "ModelStatistics has no entry for model '", model, "'",
        version.empty() ? "" : absl::StrCat(" version ", version)));
  }
  return total;
}

ServerSideSplit SplitBetween(const ServerStatsSnapshot& before,
                             const ServerStatsSnapshot& after) {
  ServerSideSplit split;
  if (!Monotonic(before, after)) return split;
  split.valid = true;
  split.requests = after.success.count - before.success.count;
  split.failures = after.fail.count - before.fail.count;
  split.inferences = after.inference_count - before.inference_count;
  split.executions = after.execution_count - before.execution_count;
  split.avg_request_us = AverageUs(before.success, after.success);
  split.avg_queue_us = AverageUs(before.queue, after.queue);
  split.avg_compute_input_us =
      AverageUs(before.compute_input, after.compute_input);
  split.avg_compute_infer_us =
      AverageUs(before.compute_infer, after.compute_infer);
  split.avg_compute_output_us =
      AverageUs(before.compute_output, after.compute_output);
  if (split.executions > 0) {
    split.avg_batch_size = static_cast<double>(split.inferences) /
                           static_cast<double>(split.executions);
  }
  return split;
}

}  // namespace coalesce::bench
