// Clock: the load generator's source of time, waits included.
//
// The open-loop sender and the measurement controller read time and sleep
// only through a Clock, so tests substitute a fake that steps time by hand.
// RealClock() is the steady clock. Implementations are thread-safe.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_CLOCK_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_CLOCK_H_

#include <chrono>

namespace coalesce::bench {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Returns once Now() >= deadline (at once when it already is).
  virtual void SleepUntil(TimePoint deadline) = 0;
};

// The process-wide steady clock. Never null; never destroyed.
Clock* RealClock();

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_CLOCK_H_
