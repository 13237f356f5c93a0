#include "batching/fake_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

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
  // Nothing advances the clock or signals: the waits return by themselves
  // (a wait that parked would hang the test) and time stays put.
  FakeClock clock;
  const Clock::TimePoint start = clock.Now();
  absl::Mutex mu;
  absl::CondVar cv;
  int returned = 0;
  {
    absl::MutexLock lock(&mu);
    clock.WaitUntil(&mu, &cv, start);
    ++returned;
    clock.WaitUntil(&mu, &cv, start - Ms(5));
    ++returned;
  }
  EXPECT_EQ(returned, 2);
  EXPECT_EQ(clock.Now(), start);
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
  const Clock::TimePoint start = clock.Now();
  bool ready = false, woke = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    while (!ready) clock.WaitUntil(&mu, &cv, Clock::TimePoint::max());
    woke = true;
  });
  clock.AwaitWaiterWithDeadline(Clock::TimePoint::max());
  {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(woke);  // parked until the signal
    ready = true;
  }
  cv.Signal();
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(clock.Now(), start);  // the signal, not time, woke it
}

TEST(FakeClockTest, SleepUntilParksUntilAdvanceReachesItsDeadline) {
  FakeClock clock;
  const Clock::TimePoint deadline = clock.Now() + Ms(10);
  absl::Notification slept;
  std::thread sleeper([&] {
    clock.SleepUntil(deadline);
    slept.Notify();
  });
  clock.AwaitWaiterWithDeadline(deadline);
  clock.Advance(Ms(9));
  clock.AwaitWaiters(1);
  EXPECT_FALSE(slept.HasBeenNotified());
  clock.Advance(Ms(1));
  sleeper.join();
  EXPECT_TRUE(slept.HasBeenNotified());
  EXPECT_EQ(clock.Now(), deadline);
}

TEST(FakeClockTest, SleepAdvancesMovesTimeAfterTheHookAndWakesWaiters) {
  FakeClock clock;
  const Clock::TimePoint start = clock.Now();
  std::vector<std::pair<Clock::TimePoint, Clock::TimePoint>> slept;
  clock.set_sleep_advances([&](Clock::TimePoint from, Clock::TimePoint to) {
    EXPECT_EQ(clock.Now(), from);  // the hook runs before time moves
    slept.emplace_back(from, to);
  });
  absl::Mutex mu;
  absl::CondVar cv;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    while (clock.Now() < start + Ms(5))
      clock.WaitUntil(&mu, &cv, start + Ms(5));
  });
  clock.AwaitWaiterWithDeadline(start + Ms(5));
  clock.SleepUntil(start + Ms(8));
  waiter.join();  // woken by the sleep's advance; a lost wakeup would hang
  clock.SleepUntil(start + Ms(3));  // already past: no hook, no move
  EXPECT_EQ(clock.Now(), start + Ms(8));
  ASSERT_EQ(slept.size(), 1u);
  EXPECT_EQ(slept[0].first, start);
  EXPECT_EQ(slept[0].second, start + Ms(8));
}

}  // namespace
}  // namespace coalesce
