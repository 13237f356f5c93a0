// RunSweep: every load level of a run, one after the other: for each
// concurrency (closed loop) or request rate (open loop), start a fresh load
// generator, measure the level (measurement.h), stop it and wait until its
// requests have completed before the next level starts.
// Runs on the calling thread.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_SWEEP_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_SWEEP_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "batching/clock.h"
#include "benchmarks/coalesce_bench/infer_sender.h"
#include "benchmarks/coalesce_bench/measurement.h"
#include "benchmarks/coalesce_bench/options.h"

namespace coalesce::bench {

struct LevelReport {
  LoadMode mode = LoadMode::kClosedLoop;
  int concurrency = 0;      // closed loop
  double request_rate = 0;  // open loop, requests/s
  LevelResult result;
  // Open loop: CPU share of one core used by the sending thread.
  double sender_thread_busy = 0;
};

struct SweepHooks {
  // Cumulative statistics of the model; null: no server split.
  std::function<absl::StatusOr<ServerStatsSnapshot>()> server_stats;
  // After each window of a level (progress display); may be null.
  std::function<void(const LevelReport& level, int window,
                     const WindowResult& result)>
      on_window;
  // After each level, with its complete report; may be null.
  std::function<void(const LevelReport& level)> on_level;
};

// The reports of every level, in order. Fails only when a level cannot be
// measured at all (a warm-up by count that never completes).
// REQUIRES: sender and clock outlive the call.
absl::StatusOr<std::vector<LevelReport>> RunSweep(const BenchOptions& options,
                                                  InferSender* sender,
                                                  Clock* clock,
                                                  const SweepHooks& hooks);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_SWEEP_H_
