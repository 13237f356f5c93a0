#include "benchmarks/coalesce_bench/stability.h"

#include <cmath>

namespace coalesce::bench {
namespace {

// True when each of values[0..n) lies within percent% of their mean.
bool WithinPercentOfMean(const double* values, int n, double percent) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += values[i];
  const double mean = sum / n;
  const double allowed = percent / 100.0 * mean;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(values[i] - mean) > allowed) return false;
  }
  return true;
}

}  // namespace

bool IsStable(const std::vector<WindowMetrics>& windows, double percent) {
  if (windows.size() < static_cast<size_t>(kStableWindows)) return false;
  double throughput[kStableWindows];
  double p50[kStableWindows];
  const size_t first = windows.size() - kStableWindows;
  for (int i = 0; i < kStableWindows; ++i) {
    throughput[i] = windows[first + i].throughput;
    p50[i] = windows[first + i].p50_ns;
  }
  return WithinPercentOfMean(throughput, kStableWindows, percent) &&
         WithinPercentOfMean(p50, kStableWindows, percent);
}

}  // namespace coalesce::bench
