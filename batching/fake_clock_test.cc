#include "batching/fake_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace coalesce {
namespace {

using Ms = std::chrono::milliseconds;

TEST(FakeClockTest, TimeMovesOnlyOnAdvance) {
  FakeClock clock;
  const Clock::TimePoint start = clock.Now();
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(Ms(7));
  EXPECT_EQ(clock.Now(), start + Ms(7));
}

TEST(FakeClockTest, PastDeadlineReturnsAtOnce) {
  FakeClock clock;
  absl::Mutex mu;
  absl::CondVar cv;
  absl::MutexLock lock(&mu);
  clock.WaitUntil(&mu, &cv, clock.Now());
}

TEST(FakeClockTest, AdvanceWakesAWaiterOnlyOnceItsDeadlinePassed) {
  FakeClock clock;
  const Clock::TimePoint deadline = clock.Now() + Ms(10);
  absl::Mutex mu;
  absl::CondVar cv;
  bool woke = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    while (clock.Now() < deadline) clock.WaitUntil(&mu, &cv, deadline);
    woke = true;
  });
  clock.AwaitWaiterWithDeadline(deadline);
  clock.Advance(Ms(9));
  clock.AwaitWaiters(1);
  {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(woke);
  }
  clock.Advance(Ms(1));
  waiter.join();
  EXPECT_TRUE(woke);
}

TEST(FakeClockTest, SignalWakesAWaiterWithoutDeadline) {
  FakeClock clock;
  absl::Mutex mu;
  absl::CondVar cv;
  bool ready = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    while (!ready) clock.WaitUntil(&mu, &cv, Clock::TimePoint::max());
  });
  clock.AwaitWaiterWithDeadline(Clock::TimePoint::max());
  {
    absl::MutexLock lock(&mu);
    ready = true;
  }
  cv.Signal();
  waiter.join();
}

}  // namespace
}  // namespace coalesce
