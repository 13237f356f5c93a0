#include "benchmarks/coalesce_bench/sweep.h"

#include <memory>

#include "benchmarks/coalesce_bench/arrival_schedule.h"
#include "benchmarks/coalesce_bench/cpu_usage.h"
#include "benchmarks/coalesce_bench/load_loop.h"

namespace coalesce::bench {
namespace {

MeasureOptions MeasureOptionsFrom(const BenchOptions& o) {
  MeasureOptions m;
  m.warmup = o.warmup;
  m.warmup_requests = o.warmup_requests;
  m.warmup_limit =
      std::max(std::chrono::milliseconds(60000), 2 * o.request_timeout);
  m.window = o.window;
  m.stability_percent = o.stability_percent;
  m.max_windows = o.max_windows;
  return m;
}

absl::StatusOr<std::unique_ptr<LoadGenerator>> MakeGenerator(
    const BenchOptions& o, const LevelReport& level, int level_index,
    InferSender* sender, WindowRecorder* recorder, Clock* clock) {
  if (level.mode == LoadMode::kClosedLoop) {
    return std::make_unique<ClosedLoopGenerator>(level.concurrency, sender,
                                                 recorder, clock);
  }
  ArrivalSchedule::Options a;
  a.kind = o.arrival;
  a.rate_per_s = level.request_rate;
  a.burst_on = o.burst_on;
  a.burst_off = o.burst_off;
  a.low_fraction = o.low_fraction;
  a.cycle = o.cycle;
  a.seed = o.seed + static_cast<uint64_t>(level_index);
  absl::StatusOr<ArrivalSchedule> schedule = ArrivalSchedule::Create(a);
  if (!schedule.ok()) return schedule.status();
  return std::make_unique<OpenLoopGenerator>(*std::move(schedule),
                                             o.max_inflight, o.channels, sender,
                                             recorder, clock);
}

std::vector<LevelReport> Levels(const BenchOptions& o) {
  std::vector<LevelReport> levels;
  if (o.mode == LoadMode::kClosedLoop) {
    for (int c : o.concurrencies) levels.push_back({o.mode, c, 0, {}, 0});
  } else {
    for (double r : o.request_rates) levels.push_back({o.mode, 0, r, {}, 0});
  }
  return levels;
}

}  // namespace

absl::StatusOr<std::vector<LevelReport>> RunSweep(const BenchOptions& options,
                                                  InferSender* sender,
                                                  Clock* clock,
                                                  const SweepHooks& hooks) {
  std::vector<LevelReport> levels = Levels(options);
  for (size_t i = 0; i < levels.size(); ++i) {
    LevelReport& level = levels[i];
    WindowRecorder recorder;
    auto generator = MakeGenerator(options, level, static_cast<int>(i), sender,
                                   &recorder, clock);
    if (!generator.ok()) return generator.status();
    MeasureSources sources;
    sources.clock = clock;
    sources.recorder = &recorder;
    sources.server_stats = hooks.server_stats;
    sources.cpu_seconds = ProcessCpuSeconds;
    if (hooks.on_window) {
      sources.on_window = [&](int w, const WindowResult& r) {
        hooks.on_window(level, w, r);
      };
    }
    (*generator)->Start();
    absl::StatusOr<LevelResult> result =
        MeasureLevel(MeasureOptionsFrom(options), sources);
    (*generator)->BeginStop();
    (*generator)->WaitDrained();
    if (!result.ok()) return result.status();
    level.result = *std::move(result);
    level.sender_thread_busy = (*generator)->sender_thread_busy_fraction();
    if (hooks.on_level) hooks.on_level(level);
  }
  return levels;
}

}  // namespace coalesce::bench
