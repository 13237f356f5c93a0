// MeasureLevel: the measurement of one load level (one concurrency or one
// request rate) while its load generator runs.
//
// Warm-up first (a duration, or a count of completed requests), whose
// results are dropped; then windows of --window-ms, repeated until the last
// three are stable (stability.h) or --max-windows is reached. Every window
// gets its latency summary, throughput, errors by gRPC code, the server-side
// split (ModelStatistics before/after the window), and the client's own CPU
// use. The level's summary merges the last (up to) three windows: their
// latencies are pooled before the percentiles are taken, and the server
// split spans from the first window's start to the last window's end.
// Runs on the calling thread; time and waits go through the given Clock.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_MEASUREMENT_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_MEASUREMENT_H_

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "batching/clock.h"
#include "benchmarks/coalesce_bench/server_stats.h"
#include "benchmarks/coalesce_bench/stats.h"
#include "benchmarks/coalesce_bench/window_recorder.h"

namespace coalesce::bench {

struct MeasureOptions {
  std::chrono::milliseconds warmup{500};
  int64_t warmup_requests = 0;  // > 0: warm up until this many completed
  // Bound of a warm-up by count (it fails with DeadlineExceeded after).
  std::chrono::milliseconds warmup_limit{60000};
  std::chrono::milliseconds window{2000};
  double stability_percent = 10;
  int max_windows = 10;
};

struct WindowResult {
  double duration_s = 0;
  int64_t successes = 0;
  int64_t error_count = 0;
  std::map<int, int64_t> errors;              // gRPC code -> count
  std::map<int, std::string> error_examples;  // gRPC code -> a message
  LatencySummary latency;
  double throughput_rps = 0;    // successful requests per second
  ServerSideSplit server;       // valid only when statistics were read
  double client_cpu_cores = 0;  // process CPU seconds / wall seconds
  int64_t sends = 0;            // open loop only
  int64_t late_sends = 0;
  int64_t max_send_lag_ns = 0;
  int64_t total_send_lag_ns = 0;
};

struct LevelResult {
  std::vector<WindowResult> windows;
  WindowResult summary;  // the last min(3, windows) windows merged
  int summarized_windows = 0;
  bool stable = false;
};

struct MeasureSources {
  Clock* clock = nullptr;              // REQUIRED
  WindowRecorder* recorder = nullptr;  // REQUIRED
  // Cumulative server statistics of the model; null or failing: the server
  // split is left invalid.
  std::function<absl::StatusOr<ServerStatsSnapshot>()> server_stats;
  std::function<double()> cpu_seconds;  // process CPU time; null: 0
  // Called after every window (progress display); may be null.
  std::function<void(int window_index, const WindowResult&)> on_window;
};

// DeadlineExceeded when a warm-up by count does not complete in time
// (e.g. every request hangs). Otherwise the level's result.
absl::StatusOr<LevelResult> MeasureLevel(const MeasureOptions& options,
                                         const MeasureSources& sources);

// The window made of several records (merged as described above).
// `before`/`after` are the statistics at its start and end, if read.
WindowResult MakeWindow(std::vector<WindowRecord> records, double duration_s,
                        const std::optional<ServerStatsSnapshot>& before,
                        const std::optional<ServerStatsSnapshot>& after,
                        double cpu_seconds);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_MEASUREMENT_H_
