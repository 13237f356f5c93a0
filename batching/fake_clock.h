// FakeClock: a Clock for tests whose time moves only when Advance() is called.
//
// WaitUntil parks the caller until its cv is signalled or Advance() moves time
// to or past its deadline; Advance wakes such waiters without lost wakeups (it
// signals while holding the waiter's own mutex, so a waiter is either not yet
// registered or already blocked in CondVar::Wait). Tests use AwaitWaiter* to
// block until the code under test is parked, so "advance 9 ms, nothing
// happened; advance 1 ms, it happened" needs no real sleep.
//
// Lock order: a waiter's mutex before the clock's internal mutex; Advance never
// holds the internal mutex while taking a waiter's mutex. Thread-safe.
#ifndef COALESCE_BATCHING_FAKE_CLOCK_H_
#define COALESCE_BATCHING_FAKE_CLOCK_H_

#include <list>

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

 private:
  struct Waiter {
    absl::Mutex* mu;
    absl::CondVar* cv;
    TimePoint deadline;
  };

  bool HasWaiterWithDeadline(TimePoint deadline) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int PendingWaiters() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  TimePoint now_ ABSL_GUARDED_BY(mu_);
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_FAKE_CLOCK_H_
