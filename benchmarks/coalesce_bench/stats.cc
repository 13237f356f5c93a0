#include "benchmarks/coalesce_bench/stats.h"

#include <algorithm>
#include <cmath>

namespace coalesce::bench {

int64_t NearestRankPercentile(const std::vector<int64_t>& sorted,
                              double percent) {
  const double n = static_cast<double>(sorted.size());
  // The small epsilon keeps p * n that is an integer in exact arithmetic
  // (e.g. 99.9% of 1000) from rounding up to the next rank.
  int64_t rank = static_cast<int64_t>(std::ceil(percent / 100.0 * n - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, static_cast<int64_t>(sorted.size()));
  return sorted[rank - 1];
}

LatencySummary Summarize(std::vector<int64_t>* latencies_ns) {
  LatencySummary s;
  if (latencies_ns->empty()) return s;
  std::vector<int64_t>& v = *latencies_ns;
  std::sort(v.begin(), v.end());
  s.count = static_cast<int64_t>(v.size());
  s.min_ns = v.front();
  s.max_ns = v.back();
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  s.mean_ns = sum / static_cast<double>(v.size());
  s.p50_ns = NearestRankPercentile(v, 50);
  s.p90_ns = NearestRankPercentile(v, 90);
  s.p95_ns = NearestRankPercentile(v, 95);
  s.p99_ns = NearestRankPercentile(v, 99);
  s.p999_ns = NearestRankPercentile(v, 99.9);
  return s;
}

}  // namespace coalesce::bench
