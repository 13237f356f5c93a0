// Latency statistics over the latencies recorded in a measurement window.
//
// Percentiles are EXACT: the latencies are sorted and the nearest-rank
// definition is used, i.e. the p-th percentile is the smallest recorded value
// such that at least p% of all values are <= it (index ceil(p/100 * n) - 1 of
// the sorted values). No interpolation, no histogram buckets: every reported
// percentile is a latency some request actually had. Sorting costs
// O(n log n) once per summary, which is negligible next to the window.
// Pure functions; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_STATS_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_STATS_H_

#include <cstdint>
#include <vector>

namespace coalesce::bench {

struct LatencySummary {
  int64_t count = 0;  // 0: every other field is 0
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p95_ns = 0;
  int64_t p99_ns = 0;
  int64_t p999_ns = 0;  // p99.9
};

// Nearest-rank percentile of `sorted` (ascending). REQUIRES: !sorted.empty(),
// 0 < percent <= 100.
int64_t NearestRankPercentile(const std::vector<int64_t>& sorted,
                              double percent);

// Summary of `latencies_ns` (any order; sorted in place).
LatencySummary Summarize(std::vector<int64_t>* latencies_ns);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_STATS_H_
