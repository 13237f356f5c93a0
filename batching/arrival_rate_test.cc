#include "batching/arrival_rate.h"

#include <chrono>
#include <random>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::TimePoint kStart = Clock::TimePoint() + seconds(1000);

// Arrivals every `gap` from `from` for `span`; returns the time after.
Clock::TimePoint Steady(ArrivalRate* rate, Clock::TimePoint from,
                        Clock::Duration gap, Clock::Duration span) {
  Clock::TimePoint t = from;
  for (; t < from + span; t += gap) rate->Record(t);
  return t;
}

TEST(ArrivalRateTest, NothingOrOneArrivalIsNoRate) {
  ArrivalRate rate;
  EXPECT_EQ(rate.PerSecond(kStart), 0);
  rate.Record(kStart);
  EXPECT_EQ(rate.PerSecond(kStart), 0);
  EXPECT_EQ(rate.PerSecond(kStart + milliseconds(10)), 0);
  rate.Record(kStart + milliseconds(10));
  EXPECT_NEAR(rate.PerSecond(kStart + milliseconds(10)), 100, 5);
}

TEST(ArrivalRateTest, ASteadyRateReadsAsItself) {
  ArrivalRate rate;
  const Clock::TimePoint end =
      Steady(&rate, kStart, milliseconds(1), seconds(3));
  EXPECT_NEAR(rate.PerSecond(end), 1000, 20);
}

TEST(ArrivalRateTest, TheFirstHundredMillisecondsAreNotReadAsALowRate) {
  ArrivalRate rate(milliseconds(250));
  const Clock::TimePoint end =
      Steady(&rate, kStart, microseconds(500), milliseconds(100));
  EXPECT_NEAR(rate.PerSecond(end), 2000, 100);
}

TEST(ArrivalRateTest, FollowsAStepUpWithinASecond) {
  ArrivalRate rate(milliseconds(250));
  Clock::TimePoint t = Steady(&rate, kStart, milliseconds(10), seconds(5));
  EXPECT_NEAR(rate.PerSecond(t), 100, 5);
  t = Steady(&rate, t, microseconds(500), seconds(1));
  EXPECT_GT(rate.PerSecond(t), 0.95 * 2000);
  EXPECT_LT(rate.PerSecond(t), 1.02 * 2000);
}

TEST(ArrivalRateTest, DecaysWhenArrivalsStop) {
  ArrivalRate rate(milliseconds(250));
  const Clock::TimePoint t = Steady(&rate, kStart, milliseconds(1), seconds(2));
  EXPECT_LT(rate.PerSecond(t + milliseconds(250)), 0.4 * 1000);
  EXPECT_LT(rate.PerSecond(t + seconds(2)), 0.001 * 1000);
}

TEST(ArrivalRateTest, PoissonArrivalsAverageToTheirRate) {
  ArrivalRate rate(milliseconds(250));
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap_s(500.0);  // 500 requests/s
  Clock::TimePoint t = kStart;
  Clock::TimePoint next_sample = kStart + seconds(2);
  double sum = 0;
  int samples = 0;
  while (t < kStart + seconds(30)) {
    t += std::chrono::duration_cast<Clock::Duration>(
        std::chrono::duration<double>(gap_s(rng)));
    rate.Record(t);
    if (t >= next_sample) {
      sum += rate.PerSecond(t);
      ++samples;
      next_sample += milliseconds(100);
    }
  }
  EXPECT_NEAR(sum / samples, 500, 15);
}

}  // namespace
}  // namespace coalesce
