// MeasureLevel against a fake clock: the "load" is injected by the clock's
// sleep hook, so every window's contents are known exactly.
#include "benchmarks/coalesce_bench/measurement.h"

#include "batching/fake_clock.h"
#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kMs = 1'000'000;

// Records `per_ms` successes per millisecond slept, with `latency_ns`.
void Inject(WindowRecorder* recorder, Clock::TimePoint from,
            Clock::TimePoint to, int per_ms, int64_t latency_ns) {
  const int64_t ms = (to - from) / milliseconds(1);
  for (int64_t i = 0; i < ms * per_ms; ++i) recorder->RecordSuccess(latency_ns);
}

// Statistics that grow by 30 inferences in 10 executions per read, each
// request queued 100 us.
struct FakeServer {
  ServerStatsSnapshot now;
  absl::StatusOr<ServerStatsSnapshot> Read() {
    now.inference_count += 30;
    now.execution_count += 10;
    now.success.count += 30;
    now.success.ns += 30 * 400'000;
    now.queue.count += 30;
    now.queue.ns += 30 * 100'000;
    return now;
  }
};

MeasureOptions Options(int max_windows) {
  MeasureOptions o;
  o.warmup = milliseconds(100);
  o.window = milliseconds(200);
  o.stability_percent = 10;
  o.max_windows = max_windows;
  return o;
}

TEST(MeasurementTest, SteadyLoadIsStableAfterThreeWindows) {
  FakeClock clock;
  WindowRecorder recorder;
  const Clock::TimePoint start = clock.Now();
  clock.set_sleep_advances([&](Clock::TimePoint from, Clock::TimePoint to) {
    const bool warmup = from < start + milliseconds(100);
    Inject(&recorder, from, to, /*per_ms=*/1, warmup ? 50 * kMs : 2 * kMs);
  });
  FakeServer server;
  double cpu = 0;
  std::vector<int> seen;
  MeasureSources s;
  s.clock = &clock;
  s.recorder = &recorder;
  s.server_stats = [&] { return server.Read(); };
  s.cpu_seconds = [&] { return cpu += 0.1; };
  s.on_window = [&](int w, const WindowResult&) { seen.push_back(w); };

  auto result = MeasureLevel(Options(/*max_windows=*/10), s);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->stable);
  ASSERT_EQ(result->windows.size(), 3u);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  const WindowResult& w0 = result->windows[0];
  EXPECT_DOUBLE_EQ(w0.duration_s, 0.2);
  EXPECT_EQ(w0.successes, 200);
  EXPECT_DOUBLE_EQ(w0.throughput_rps, 1000);
  EXPECT_DOUBLE_EQ(w0.client_cpu_cores, 0.5);  // 0.1 s of CPU in 0.2 s
  ASSERT_TRUE(w0.server.valid);
  EXPECT_DOUBLE_EQ(w0.server.avg_batch_size, 3);
  EXPECT_DOUBLE_EQ(w0.server.avg_queue_us, 100);

  const WindowResult& sum = result->summary;
  EXPECT_EQ(result->summarized_windows, 3);
  EXPECT_EQ(sum.successes, 600);
  EXPECT_DOUBLE_EQ(sum.duration_s, 0.6);
  EXPECT_EQ(sum.latency.p99_ns, 2 * kMs);  // warm-up latencies were dropped
  EXPECT_EQ(sum.latency.max_ns, 2 * kMs);
  EXPECT_EQ(sum.server.inferences, 90u);
  EXPECT_EQ(sum.server.executions, 30u);
}

TEST(MeasurementTest, UnstableLoadRunsMaxWindowsAndMergesTheLastThree) {
  FakeClock clock;
  WindowRecorder recorder;
  int sleeps = 0;
  clock.set_sleep_advances([&](Clock::TimePoint from, Clock::TimePoint to) {
    // warm-up sleep first, then windows alternating 1 and 2 per ms
    const int per_ms = (sleeps++ % 2 == 0) ? 1 : 2;
    Inject(&recorder, from, to, per_ms, (3 - per_ms) * kMs);
  });
  MeasureSources s;
  s.clock = &clock;
  s.recorder = &recorder;
  auto result = MeasureLevel(Options(/*max_windows=*/5), s);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->stable);
  ASSERT_EQ(result->windows.size(), 5u);
  EXPECT_EQ(result->windows[0].successes, 400);  // sleep 1: 2 per ms
  EXPECT_EQ(result->windows[1].successes, 200);
  // windows 2, 3, 4: 400 + 200 + 400
  EXPECT_EQ(result->summary.successes, 1000);
  EXPECT_EQ(result->summarized_windows, 3);
  EXPECT_FALSE(result->summary.server.valid);  // no statistics source
  // of the pooled latencies, 800 are 1 ms and 200 are 2 ms
  EXPECT_EQ(result->summary.latency.p50_ns, 1 * kMs);
  EXPECT_EQ(result->summary.latency.p90_ns, 2 * kMs);
}

TEST(MeasurementTest, ErrorsAreCountedByCode) {
  FakeClock clock;
  WindowRecorder recorder;
  clock.set_sleep_advances([&](Clock::TimePoint from, Clock::TimePoint to) {
    Inject(&recorder, from, to, 1, kMs);
    recorder.RecordError(14, "queue full");
    recorder.RecordError(4, "deadline");
    recorder.RecordError(14, "queue full again");
  });
  MeasureSources s;
  s.clock = &clock;
  s.recorder = &recorder;
  auto result = MeasureLevel(Options(/*max_windows=*/3), s);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->summary.error_count, 9);
  EXPECT_EQ(result->summary.errors.at(14), 6);
  EXPECT_EQ(result->summary.errors.at(4), 3);
  EXPECT_EQ(result->summary.error_examples.at(14), "queue full");
}

TEST(MeasurementTest, WarmupByCountWaitsForCompletions) {
  FakeClock clock;
  WindowRecorder recorder;
  int sleeps = 0;
  clock.set_sleep_advances([&](Clock::TimePoint, Clock::TimePoint) {
    ++sleeps;
    recorder.RecordSuccess(kMs);
  });
  MeasureOptions o = Options(/*max_windows=*/1);
  o.warmup_requests = 7;
  MeasureSources s;
  s.clock = &clock;
  s.recorder = &recorder;
  auto result = MeasureLevel(o, s);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(sleeps, 7 + 1);  // 7 warm-up polls, 1 window
  EXPECT_EQ(result->summary.successes, 1);
}

TEST(MeasurementTest, WarmupByCountThatNeverCompletesFails) {
  FakeClock clock;
  clock.set_sleep_advances();
  WindowRecorder recorder;
  MeasureOptions o = Options(/*max_windows=*/3);
  o.warmup_requests = 1;
  o.warmup_limit = milliseconds(1000);
  MeasureSources s;
  s.clock = &clock;
  s.recorder = &recorder;
  auto result = MeasureLevel(o, s);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace coalesce::bench
