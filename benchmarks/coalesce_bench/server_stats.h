// The server-side split of a measurement window, from ModelStatistics.
//
// The benchmark reads the model's cumulative statistics before and after
// each window; the difference says where a request spent its time inside the
// server: queue, compute input, compute infer, compute output (each an
// average per request, the durations' own counts as the divisor, as Triton
// counts them), and the average executed batch size (inference_count delta /
// execution_count delta). The statistics cover every client of the model,
// not only this benchmark. Pure functions; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_SERVER_STATS_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_SERVER_STATS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"

namespace coalesce::bench {

struct DurationTotal {
  uint64_t count = 0;
  uint64_t ns = 0;
};

// Cumulative counters of one model (summed over its versions).
struct ServerStatsSnapshot {
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  DurationTotal success;
  DurationTotal fail;
  DurationTotal queue;
  DurationTotal compute_input;
  DurationTotal compute_infer;
  DurationTotal compute_output;
};

// What happened between two snapshots. All averages are 0 when their count
// did not grow.
struct ServerSideSplit {
  bool valid = false;     // false: no snapshots, or a counter went backwards
                          // (the model was reloaded); every field is 0
  uint64_t requests = 0;  // successful requests (success.count delta)
  uint64_t failures = 0;
  uint64_t inferences = 0;    // inference_count delta (batch elements)
  uint64_t executions = 0;    // execution_count delta
  double avg_request_us = 0;  // success: server end-to-end per request
  double avg_queue_us = 0;
  double avg_compute_input_us = 0;
  double avg_compute_infer_us = 0;
  double avg_compute_output_us = 0;
  double avg_batch_size = 0;  // inferences / executions
};

// The sum of the entries of `response` named `model` whose version is
// `version` (any version when empty). NotFound when there is none.
absl::StatusOr<ServerStatsSnapshot> SnapshotFromProto(
    const inference::ModelStatisticsResponse& response,
    const std::string& model, const std::string& version);

// after - before, as averages. REQUIRES: both of the same model.
ServerSideSplit SplitBetween(const ServerStatsSnapshot& before,
                             const ServerStatsSnapshot& after);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_SERVER_STATS_H_
