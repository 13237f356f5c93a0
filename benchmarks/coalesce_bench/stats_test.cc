// Percentiles are checked against values worked out by hand and, for random
// data, against the nearest-rank definition itself evaluated by counting
// (no sorting, no index arithmetic shared with the code under test).
#include "benchmarks/coalesce_bench/stats.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

TEST(StatsTest, OneToHundredShuffled) {
  std::vector<int64_t> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  std::shuffle(v.begin(), v.end(), std::mt19937(7));
  const LatencySummary s = Summarize(&v);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.min_ns, 1);
  EXPECT_EQ(s.max_ns, 100);
  EXPECT_DOUBLE_EQ(s.mean_ns, 50.5);
  EXPECT_EQ(s.p50_ns, 50);
  EXPECT_EQ(s.p90_ns, 90);
  EXPECT_EQ(s.p95_ns, 95);
  EXPECT_EQ(s.p99_ns, 99);
  EXPECT_EQ(s.p999_ns, 100);  // 99.9% of 100 values: rank 100
}

TEST(StatsTest, TenValuesByHand) {
  std::vector<int64_t> v = {50, 10, 90, 30, 70, 20, 80, 40, 60, 100};
  const LatencySummary s = Summarize(&v);
  EXPECT_EQ(s.p50_ns, 50);   // rank ceil(5.0) = 5
  EXPECT_EQ(s.p90_ns, 90);   // rank 9
  EXPECT_EQ(s.p95_ns, 100);  // rank ceil(9.5) = 10
  EXPECT_EQ(s.p99_ns, 100);
  EXPECT_DOUBLE_EQ(s.mean_ns, 55.0);
}

TEST(StatsTest, ExactRankIsNotRoundedUp) {
  std::vector<int64_t> v;
  for (int i = 1000; i >= 1; --i) v.push_back(i);
  const LatencySummary s = Summarize(&v);
  EXPECT_EQ(s.p999_ns, 999);  // 99.9% of 1000 is exactly rank 999
  EXPECT_EQ(s.p99_ns, 990);
  EXPECT_EQ(s.p50_ns, 500);
}

TEST(StatsTest, SingleValueAndEmpty) {
  std::vector<int64_t> one = {42};
  const LatencySummary s = Summarize(&one);
  EXPECT_EQ(s.p50_ns, 42);
  EXPECT_EQ(s.p999_ns, 42);
  std::vector<int64_t> none;
  EXPECT_EQ(Summarize(&none).count, 0);
  EXPECT_EQ(Summarize(&none).p99_ns, 0);
}

// The nearest-rank p-th percentile v satisfies, by definition:
//   #{x <= v} >= p% of n   and   #{x < v} < p% of n.
TEST(StatsTest, RandomDataMatchesTheDefinitionByCounting) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int64_t> dist(0, 5000);  // many duplicates
  std::vector<int64_t> data(10007);
  for (int64_t& x : data) x = dist(rng);
  std::vector<int64_t> copy = data;
  const LatencySummary s = Summarize(&copy);
  const double n = static_cast<double>(data.size());
  const std::pair<double, int64_t> cases[] = {{50, s.p50_ns},
                                              {90, s.p90_ns},
                                              {95, s.p95_ns},
                                              {99, s.p99_ns},
                                              {99.9, s.p999_ns}};
  for (const auto& [p, value] : cases) {
    int64_t at_most = 0, below = 0;
    for (int64_t x : data) {
      at_most += x <= value;
      below += x < value;
    }
    EXPECT_GE(at_most, p / 100 * n) << "p" << p;
    EXPECT_LT(below, p / 100 * n) << "p" << p;
  }
}

}  // namespace
}  // namespace coalesce::bench
