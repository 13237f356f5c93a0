// Clock: the only source of time, waits included, for the batcher and for
// coalesce-bench's load generator (its own target, coalesce_clock, so the
// load tester links it without the batcher).
//
// Every timestamp and every timed wait goes through a Clock so tests can
// substitute a FakeClock (batching/fake_clock.h) and step time by hand.
// RealClock() is the process-wide steady clock. Implementations are
// thread-safe.
#ifndef COALESCE_BATCHING_CLOCK_H_
#define COALESCE_BATCHING_CLOCK_H_

#include <chrono>

#include "absl/synchronization/mutex.h"

namespace coalesce {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  virtual TimePoint Now() const = 0;

  // Waits on *cv, releasing *mu, until signalled, until this clock reaches
  // `deadline` (TimePoint::max() = no deadline), or spuriously. Returns with
  // *mu held; callers re-check their condition.
  // REQUIRES: *mu held by the caller.
  virtual void WaitUntil(absl::Mutex* mu, absl::CondVar* cv,
                         TimePoint deadline) = 0;

  // Returns once Now() >= deadline (at once when it already is): a wait
  // nobody signals.
  virtual void SleepUntil(TimePoint deadline) = 0;
};

// The process-wide steady clock. Never null; never destroyed.
Clock* RealClock();

// `t + d`, clamped to TimePoint::max() instead of overflowing. REQUIRES: d >=
// 0.
Clock::TimePoint AddSaturating(Clock::TimePoint t, Clock::Duration d);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_CLOCK_H_
