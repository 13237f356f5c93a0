// What the per-instance state split (batching/instance_timeline.h) costs the
// batcher: the work it adds per request (a queue-state note) and per batch
// (taken + released with five step intervals), always on, metrics or not.
// Compare with the request path's cost per request (tens of microseconds).
//
//   build/benchmarks/instance_timeline_bench
#include <benchmark/benchmark.h>

#include <chrono>

#include "batching/instance_timeline.h"

namespace coalesce {
namespace {

using std::chrono::microseconds;

// Per request: the queue turns non-empty on enqueue and empty when the batch
// takes it; most notes change nothing.
void BM_QueueNote(benchmark::State& state) {
  Clock::TimePoint t{};
  InstanceTimeline timeline(t);
  bool empty = false;
  for (auto _ : state) {
    t += microseconds(10);
    timeline.QueueChanged(t, empty);
    empty = !empty;
  }
}
BENCHMARK(BM_QueueNote);

// Per batch, double buffered: batch k+1 is taken before batch k is released.
void BM_BatchDoubleBuffered(benchmark::State& state) {
  Clock::TimePoint t{};
  InstanceTimeline timeline(t);
  uint64_t previous = timeline.BatchTaken(t);
  for (auto _ : state) {
    const Clock::TimePoint taken = t;
    const uint64_t ticket = timeline.BatchTaken(taken);
    BatchIntervals steps;
    steps.gather = {t, t + microseconds(5)};
    steps.copy_in = {t + microseconds(5), t + microseconds(20)};
    steps.run = {t + microseconds(20), t + microseconds(80)};
    steps.copy_out = {t + microseconds(80), t + microseconds(90)};
    steps.scatter = {t + microseconds(90), t + microseconds(95)};
    t += microseconds(100);
    timeline.BatchReleased(previous, t, steps);
    previous = ticket;
  }
  benchmark::DoNotOptimize(timeline.Totals(t));
}
BENCHMARK(BM_BatchDoubleBuffered);

}  // namespace
}  // namespace coalesce

BENCHMARK_MAIN();
