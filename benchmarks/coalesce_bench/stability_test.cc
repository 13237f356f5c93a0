#include "benchmarks/coalesce_bench/stability.h"

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

WindowMetrics W(double throughput, double p50) { return {throughput, p50}; }

TEST(StabilityTest, FewerThanThreeWindowsAreNeverStable) {
  EXPECT_FALSE(IsStable({}, /*percent=*/10));
  EXPECT_FALSE(IsStable({W(100, 5), W(100, 5)}, /*percent=*/10));
}

TEST(StabilityTest, ThreeCloseWindowsAreStable) {
  // mean throughput 100, deviations 9%; mean p50 5.0, deviations 8%
  EXPECT_TRUE(IsStable({W(91, 4.6), W(100, 5.0), W(109, 5.4)}, 10));
}

TEST(StabilityTest, ThroughputOutsideTheBandIsUnstable) {
  // mean 100, one window 12% above
  EXPECT_FALSE(IsStable({W(94, 5), W(94, 5), W(112, 5)}, 10));
}

TEST(StabilityTest, LatencyOutsideTheBandIsUnstable) {
  // p50 mean 5, one window 20% above
  EXPECT_FALSE(IsStable({W(100, 4.5), W(100, 4.5), W(100, 6)}, 10));
}

TEST(StabilityTest, OnlyTheLastThreeWindowsCount) {
  EXPECT_TRUE(
      IsStable({W(10, 50), W(500, 1), W(100, 5), W(101, 5), W(99, 5)}, 10));
  EXPECT_FALSE(IsStable({W(100, 5), W(101, 5), W(99, 5), W(300, 5)}, 10));
}

TEST(StabilityTest, PercentIsTheTolerance) {
  const std::vector<WindowMetrics> w = {W(85, 5), W(100, 5), W(115, 5)};
  EXPECT_FALSE(IsStable(w, 10));
  EXPECT_TRUE(IsStable(w, 20));
}

TEST(StabilityTest, AllZeroIsStable) {
  EXPECT_TRUE(IsStable({W(0, 0), W(0, 0), W(0, 0)}, 10));
  EXPECT_FALSE(IsStable({W(0, 0), W(0, 0), W(3, 1)}, 10));
}

}  // namespace
}  // namespace coalesce::bench
