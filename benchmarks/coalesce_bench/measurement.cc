#include "benchmarks/coalesce_bench/measurement.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/coalesce_bench/stability.h"

namespace coalesce::bench {
namespace {

// How often a warm-up by count looks at the completion counter.
constexpr std::chrono::milliseconds kWarmupPoll{5};

std::optional<ServerStatsSnapshot> ReadStats(const MeasureSources& s) {
  if (!s.server_stats) return std::nullopt;
  absl::StatusOr<ServerStatsSnapshot> snapshot = s.server_stats();
  if (!snapshot.ok()) return std::nullopt;
  return *snapshot;
}

double Cpu(const MeasureSources& s) {
  return s.cpu_seconds ? s.cpu_seconds() : 0;
}

double Seconds(Clock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

absl::Status WarmUp(const MeasureOptions& o, const MeasureSources& s) {
  Clock* clock = s.clock;
  if (o.warmup_requests > 0) {
    const Clock::TimePoint limit = clock->Now() + o.warmup_limit;
    while (s.recorder->completed_total() < o.warmup_requests) {
      if (clock->Now() >= limit) {
        return absl::DeadlineExceededError(absl::StrCat(
            "warm-up: only ", s.recorder->completed_total(), " of ",
            o.warmup_requests, " requests completed within ",
            o.warmup_limit.count(), " ms"));
      }
      clock->SleepUntil(clock->Now() + kWarmupPoll);
    }
  } else {
    clock->SleepUntil(clock->Now() + o.warmup);
  }
  s.recorder->TakeWindow();  // warm-up results are dropped
  return absl::OkStatus();
}

// The boundaries between windows: instant, CPU time and server statistics.
struct Boundaries {
  std::vector<Clock::TimePoint> times;
  std::vector<double> cpu;
  std::vector<std::optional<ServerStatsSnapshot>> stats;

  void Add(const MeasureSources& s) {
    times.push_back(s.clock->Now());
    cpu.push_back(Cpu(s));
    stats.push_back(ReadStats(s));
  }
};

// The window made of records[first, last) between boundaries first and last.
WindowResult Merge(const std::vector<WindowRecord>& records,
                   const Boundaries& b, size_t first, size_t last) {
  std::vector<WindowRecord> chosen(records.begin() + first,
                                   records.begin() + last);
  return MakeWindow(std::move(chosen), Seconds(b.times[last] - b.times[first]),
                    b.stats[first], b.stats[last], b.cpu[last] - b.cpu[first]);
}

}  // namespace

WindowResult MakeWindow(std::vector<WindowRecord> records, double duration_s,
                        const std::optional<ServerStatsSnapshot>& before,
                        const std::optional<ServerStatsSnapshot>& after,
                        double cpu_seconds) {
  WindowResult w;
  w.duration_s = duration_s;
  std::vector<int64_t> latencies;
  for (WindowRecord& r : records) {
    latencies.insert(latencies.end(), r.latencies_ns.begin(),
                     r.latencies_ns.end());
    for (const auto& [code, count] : r.errors) {
      w.errors[code] += count;
      w.error_count += count;
    }
    w.error_examples.merge(r.error_examples);
    w.sends += r.sends;
    w.late_sends += r.late_sends;
    w.max_send_lag_ns = std::max(w.max_send_lag_ns, r.max_send_lag_ns);
    w.total_send_lag_ns += r.total_send_lag_ns;
  }
  w.successes = static_cast<int64_t>(latencies.size());
  w.latency = Summarize(&latencies);
  if (duration_s > 0) {
    w.throughput_rps = static_cast<double>(w.successes) / duration_s;
    w.client_cpu_cores = cpu_seconds / duration_s;
  }
  if (before.has_value() && after.has_value()) {
    w.server = SplitBetween(*before, *after);
  }
  return w;
}

absl::StatusOr<LevelResult> MeasureLevel(const MeasureOptions& options,
                                         const MeasureSources& sources) {
  if (absl::Status s = WarmUp(options, sources); !s.ok()) return s;
  LevelResult result;
  std::vector<WindowRecord> records;
  std::vector<WindowMetrics> metrics;
  Boundaries bounds;
  bounds.Add(sources);
  for (int w = 0; w < options.max_windows; ++w) {
    sources.clock->SleepUntil(bounds.times.back() + options.window);
    records.push_back(sources.recorder->TakeWindow());
    bounds.Add(sources);
    result.windows.push_back(Merge(records, bounds, w, w + 1));
    const WindowResult& window = result.windows.back();
    metrics.push_back(
        {window.throughput_rps, static_cast<double>(window.latency.p50_ns)});
    if (sources.on_window) sources.on_window(w, window);
    if (IsStable(metrics, options.stability_percent)) {
      result.stable = true;
      break;
    }
  }
  const size_t n = records.size();
  const size_t k = std::min<size_t>(n, kStableWindows);
  result.summary = Merge(records, bounds, n - k, n);
  result.summarized_windows = static_cast<int>(k);
  return result;
}

}  // namespace coalesce::bench
