// The stability rule that ends a load level's measurement.
//
// A level is stable when, over its last kStableWindows (3) windows, every
// window's throughput AND every window's p50 latency lies within
// `percent`% of the mean of those three windows:
//     |x_i - mean| <= percent / 100 * mean   for each of the 3 windows.
// Fewer than three windows are never stable. A metric whose three values are
// all 0 (e.g. no successful request at all) counts as stable for that
// metric. Pure function; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_STABILITY_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_STABILITY_H_

#include <vector>

namespace coalesce::bench {

inline constexpr int kStableWindows = 3;

struct WindowMetrics {
  double throughput = 0;  // requests per second
  double p50_ns = 0;
};

// REQUIRES: percent >= 0.
bool IsStable(const std::vector<WindowMetrics>& windows, double percent);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_STABILITY_H_
