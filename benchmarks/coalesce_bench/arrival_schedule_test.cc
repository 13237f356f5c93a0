#include "benchmarks/coalesce_bench/arrival_schedule.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

ArrivalSchedule Make(ArrivalKind kind, double rate, uint64_t seed = 1,
                     milliseconds on = milliseconds(100),
                     milliseconds off = milliseconds(100)) {
  ArrivalSchedule::Options o;
  o.kind = kind;
  o.rate_per_s = rate;
  o.seed = seed;
  o.burst_on = on;
  o.burst_off = off;
  auto s = ArrivalSchedule::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

std::vector<int64_t> Offsets(ArrivalSchedule& s, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.Next().count());
  return out;
}

TEST(ArrivalScheduleTest, ConstantSpacingIsExact) {
  ArrivalSchedule s = Make(ArrivalKind::kConstant, /*rate=*/1000);
  const std::vector<int64_t> t = Offsets(s, 10000);
  for (int k = 0; k < 10000; ++k) ASSERT_EQ(t[k], k * 1'000'000LL) << k;
}

TEST(ArrivalScheduleTest, ConstantRateThatDoesNotDivideDoesNotDrift) {
  ArrivalSchedule s = Make(ArrivalKind::kConstant, /*rate=*/3);
  const std::vector<int64_t> t = Offsets(s, 3001);
  // 3 per second: every third request lands on a whole second exactly.
  for (int k = 0; k <= 3000; k += 3) ASSERT_EQ(t[k], k / 3 * 1'000'000'000LL);
  for (int k = 1; k <= 3000; ++k) {
    const int64_t gap = t[k] - t[k - 1];
    ASSERT_TRUE(gap == 333'333'333 || gap == 333'333'334) << gap;
  }
}

TEST(ArrivalScheduleTest, PoissonMeanRateAndVariability) {
  ArrivalSchedule s = Make(ArrivalKind::kPoisson, /*rate=*/1000, /*seed=*/42);
  constexpr int kN = 200000;
  const std::vector<int64_t> t = Offsets(s, kN);
  double sum = 0, sum_sq = 0;
  int64_t prev = 0;
  for (int64_t x : t) {
    const double gap = static_cast<double>(x - prev);
    ASSERT_GE(gap, 0);
    sum += gap;
    sum_sq += gap * gap;
    prev = x;
  }
  const double mean = sum / kN;  // expected 1 ms; std error ~0.22%
  EXPECT_NEAR(mean, 1e6, 0.01 * 1e6);
  // exponential gaps: standard deviation equals the mean
  const double sd = std::sqrt(sum_sq / kN - mean * mean);
  EXPECT_NEAR(sd / mean, 1.0, 0.02);
}

TEST(ArrivalScheduleTest, PoissonIsReproducibleBySeed) {
  ArrivalSchedule a = Make(ArrivalKind::kPoisson, 500, /*seed=*/9);
  ArrivalSchedule b = Make(ArrivalKind::kPoisson, 500, /*seed=*/9);
  ArrivalSchedule c = Make(ArrivalKind::kPoisson, 500, /*seed=*/10);
  const std::vector<int64_t> ta = Offsets(a, 100), tb = Offsets(b, 100),
                             tc = Offsets(c, 100);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(ArrivalScheduleTest, BurstyNeverSendsWhileOffAndKeepsTheMeanRate) {
  const milliseconds on(50), off(150);
  ArrivalSchedule s =
      Make(ArrivalKind::kBursty, /*rate=*/400, /*seed=*/3, on, off);
  constexpr int kN = 100000;
  const std::vector<int64_t> t = Offsets(s, kN);
  const int64_t cycle = nanoseconds(on + off).count();
  const int64_t on_ns = nanoseconds(on).count();
  int64_t prev = 0;
  for (int64_t x : t) {
    ASSERT_LT(x % cycle, on_ns) << "sent during an off period at " << x;
    ASSERT_GE(x, prev);
    prev = x;
  }
  // 100000 requests at 400/s on average take about 250 s.
  const double rate = kN / (static_cast<double>(t.back()) / 1e9);
  EXPECT_NEAR(rate, 400, 0.02 * 400);
}

TEST(ArrivalScheduleTest, InvalidOptions) {
  ArrivalSchedule::Options o;
  o.rate_per_s = 0;
  EXPECT_EQ(ArrivalSchedule::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.rate_per_s = 10;
  o.kind = ArrivalKind::kBursty;
  o.burst_off = nanoseconds(0);
  EXPECT_EQ(ArrivalSchedule::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce::bench

namespace coalesce::bench {
namespace {

ArrivalSchedule MakeCycle(ArrivalKind kind, double rate, double low_fraction,
                          std::chrono::milliseconds cycle) {
  ArrivalSchedule::Options o;
  o.kind = kind;
  o.rate_per_s = rate;
  o.low_fraction = low_fraction;
  o.cycle = cycle;
  o.seed = 7;
  auto s = ArrivalSchedule::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

// Arrivals in each quarter of the cycle, over `cycles` cycles of 1 s.
std::vector<double> PerQuarter(ArrivalSchedule& s, int cycles) {
  std::vector<double> counts(4);
  while (true) {
    const int64_t t = s.Next().count();
    if (t >= cycles * 1'000'000'000LL) break;
    counts[(t % 1'000'000'000LL) / 250'000'000LL] += 1;
  }
  return counts;
}

// 1,000/s high, 100/s low: per 1 s cycle, 25 arrivals in each low quarter
// and 250 in each high one (a Poisson count: 1 % relative error at 200
// cycles of 250).
TEST(ArrivalScheduleTest, StepIsLowForHalfACycleThenHigh) {
  ArrivalSchedule s =
      MakeCycle(ArrivalKind::kStep, 1000, 0.1, std::chrono::milliseconds(1000));
  const std::vector<double> q = PerQuarter(s, 200);
  EXPECT_NEAR(q[0] / 200, 25, 1.0);
  EXPECT_NEAR(q[1] / 200, 25, 1.0);
  EXPECT_NEAR(q[2] / 200, 250, 5.0);
  EXPECT_NEAR(q[3] / 200, 250, 5.0);
}

// A ramp from 100/s to 1,000/s and back, 1 s cycle: the first quarter
// expects 0.25 s * 100 + 900 * 0.25^2 = 81.25, the second 0.25 * 100 +
// 900 * (0.5^2 - 0.25^2) = 193.75; then the mirror image.
TEST(ArrivalScheduleTest, RampClimbsAndFallsLinearly) {
  ArrivalSchedule s =
      MakeCycle(ArrivalKind::kRamp, 1000, 0.1, std::chrono::milliseconds(1000));
  const std::vector<double> q = PerQuarter(s, 200);
  EXPECT_NEAR(q[0] / 200, 81.25, 2.0);
  EXPECT_NEAR(q[1] / 200, 193.75, 4.0);
  EXPECT_NEAR(q[2] / 200, 193.75, 4.0);
  EXPECT_NEAR(q[3] / 200, 81.25, 2.0);
}

TEST(ArrivalScheduleTest, StepAndRampNeedAFractionAndACycle) {
  ArrivalSchedule::Options o;
  o.kind = ArrivalKind::kRamp;
  o.low_fraction = 0;
  EXPECT_FALSE(ArrivalSchedule::Create(o).ok());
  o.low_fraction = 1.5;
  EXPECT_FALSE(ArrivalSchedule::Create(o).ok());
  o.low_fraction = 1;
  o.cycle = std::chrono::nanoseconds(0);
  EXPECT_FALSE(ArrivalSchedule::Create(o).ok());
}

}  // namespace
}  // namespace coalesce::bench
