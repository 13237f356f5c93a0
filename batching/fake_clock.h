// FakeClock: a Clock for tests whose time moves only when Advance() is called.
//
// WaitUntil parks the caller until its cv is signalled or Advance() moves time
// to or past its deadline; Advance wakes such waiters without lost wakeups (it
// signals while holding the waiter's own mutex, so a waiter is either not yet
// registered or already blocked in CondVar::Wait). Tests use AwaitWaiter* to
// block until the code under test is parked, so "advance 9 ms, nothing
// happened; advance 1 ms, it happened" needs no real sleep.
//
// SleepUntil parks like WaitUntil, until Advance reaches the deadline. A test
// whose only driver of time is the sleeper itself (coalesce-bench's
// single-threaded load loops) calls set_sleep_advances instead: SleepUntil
// then runs the optional hook with the interval being slept through (to
// inject what happens "during" it) and moves time to the deadline itself,
// waking the waiters it reaches.
//
// Lock order: a waiter's mutex before the clock's internal mutex; Advance never
// holds the internal mutex while taking a waiter's mutex. Thread-safe.
#ifndef COALESCE_BATCHING_FAKE_CLOCK_H_
#define COALESCE_BATCHING_FAKE_CLOCK_H_

#include <functional>
#include <list>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"

namespace coalesce {

class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary fixed, non-zero time point.
  FakeClock();

  TimePoint Now() const override;
  void WaitUntil(absl::Mutex* mu, absl::CondVar* cv,
                 TimePoint deadline) override;
  void SleepUntil(TimePoint deadline) override;

  // Moves time forward by `d` (>= 0) and wakes every waiter whose deadline
  // is now reached. Returns after those waiters have been signalled (not
  // necessarily after they have run).
  void Advance(Duration d);

  // Blocks until some thread is parked in WaitUntil with exactly `deadline`
  // (and that deadline is still in the future).
  void AwaitWaiterWithDeadline(TimePoint deadline);

  // Blocks until at least `count` threads are parked in WaitUntil with a
  // deadline still in the future.
  void AwaitWaiters(int count);

  // Makes SleepUntil advance time itself, after calling `hook(from, to)`
  // when there is one.
  // REQUIRES: called before the clock is shared with other threads.
  using SleepHook = std::function<void(TimePoint from, TimePoint to)>;
  void set_sleep_advances(SleepHook hook = {});

 private:
  struct Waiter {
    absl::Mutex* mu;    // null for a sleeper (ParkUntil)
    absl::CondVar* cv;  // null for a sleeper
    TimePoint deadline;
  };

  std::vector<Waiter> DueWaiters() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Signals each waiter while holding its own mutex (no lost wakeup).
  static void Wake(const std::vector<Waiter>& due);
  bool HasWaiterWithDeadline(TimePoint deadline) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int PendingWaiters() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Moves time to `t` (when later than now) and wakes the waiters it reaches.
  void AdvanceTo(TimePoint t);
  // SleepUntil without set_sleep_advances: parks on mu_ until Advance
  // reaches `deadline` (counted by AwaitWaiters like any waiter).
  void ParkUntil(TimePoint deadline);

  // Set before sharing; read-only afterwards.
  bool sleep_advances_ = false;
  SleepHook on_sleep_;
  mutable absl::Mutex mu_;
  TimePoint now_ ABSL_GUARDED_BY(mu_);
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_FAKE_CLOCK_H_
