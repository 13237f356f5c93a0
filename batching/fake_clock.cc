#include "batching/fake_clock.h"

#include <utility>
#include <vector>

namespace coalesce {

FakeClock::FakeClock() : now_(TimePoint() + std::chrono::hours(1)) {}

Clock::TimePoint FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::WaitUntil(absl::Mutex* mu, absl::CondVar* cv,
                          TimePoint deadline) {
  std::list<Waiter>::iterator self;
  {
    absl::MutexLock lock(&mu_);
    if (deadline <= now_) return;
    self = waiters_.insert(waiters_.end(), Waiter{mu, cv, deadline});
  }
  // *mu is still held: an Advance that picked this waiter blocks on *mu until
  // Wait below has released it, so its Signal cannot be lost.
  cv->Wait(mu);
  absl::MutexLock lock(&mu_);
  waiters_.erase(self);
}

void FakeClock::SleepUntil(TimePoint deadline) {
  if (!sleep_advances_) return ParkUntil(deadline);
  const TimePoint from = Now();
  if (deadline <= from) return;
  if (on_sleep_) on_sleep_(from, deadline);
  AdvanceTo(deadline);
}

void FakeClock::ParkUntil(TimePoint deadline) {
  absl::MutexLock lock(&mu_);
  if (deadline <= now_) return;
  // No mutex or condition of the sleeper's own: Advance moves now_ under
  // mu_, which re-evaluates the condition, so nothing outside the clock is
  // signalled (or outlived).
  auto self =
      waiters_.insert(waiters_.end(), Waiter{nullptr, nullptr, deadline});
  auto reached = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return now_ >= deadline;
  };
  mu_.Await(absl::Condition(&reached));
  waiters_.erase(self);
}

void FakeClock::set_sleep_advances(SleepHook hook) {
  sleep_advances_ = true;
  on_sleep_ = std::move(hook);
}

void FakeClock::Advance(Duration d) {
  std::vector<Waiter> due;
  {
    absl::MutexLock lock(&mu_);
    now_ += d;
    due = DueWaiters();
  }
  Wake(due);
}

void FakeClock::AdvanceTo(TimePoint t) {
  std::vector<Waiter> due;
  {
    absl::MutexLock lock(&mu_);
    if (t > now_) now_ = t;
    due = DueWaiters();
  }
  Wake(due);
}

std::vector<FakeClock::Waiter> FakeClock::DueWaiters() const {
  std::vector<Waiter> due;
  for (const Waiter& w : waiters_) {
    // Sleepers (no cv) wait on mu_ itself and need no signal.
    if (w.cv != nullptr && w.deadline <= now_) due.push_back(w);
  }
  return due;
}

void FakeClock::Wake(const std::vector<Waiter>& due) {
  for (const Waiter& w : due) {
    absl::MutexLock lock(w.mu);
    w.cv->SignalAll();
  }
}

bool FakeClock::HasWaiterWithDeadline(TimePoint deadline) const {
  if (deadline <= now_) return false;
  for (const Waiter& w : waiters_) {
    if (w.deadline == deadline) return true;
  }
  return false;
}

int FakeClock::PendingWaiters() const {
  int count = 0;
  for (const Waiter& w : waiters_) count += w.deadline > now_ ? 1 : 0;
  return count;
}

void FakeClock::AwaitWaiterWithDeadline(TimePoint deadline) {
  absl::MutexLock lock(&mu_);
  auto parked = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return HasWaiterWithDeadline(deadline);
  };
  mu_.Await(absl::Condition(&parked));
}

void FakeClock::AwaitWaiters(int count) {
  absl::MutexLock lock(&mu_);
  auto parked = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return PendingWaiters() >= count;
  };
  mu_.Await(absl::Condition(&parked));
}

}  // namespace coalesce
