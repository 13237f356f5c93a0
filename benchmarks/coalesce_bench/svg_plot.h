// RenderLatencySvg: a self-contained SVG chart of latency (p50 and p99)
// against throughput, one point per load level, in level order. Written by
// hand (no plotting dependency): axes with round tick values, two polylines
// with markers, a legend. Pure function; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_SVG_PLOT_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_SVG_PLOT_H_

#include <string>
#include <vector>

namespace coalesce::bench {

struct PlotPoint {
  double throughput = 0;  // x: inferences per second
  double p50_ms = 0;
  double p99_ms = 0;
  std::string label;  // e.g. "c=4" or "200/s", written next to the p99 mark
};

// A complete SVG document. `title` is escaped for XML.
std::string RenderLatencySvg(const std::vector<PlotPoint>& points,
                             const std::string& title);

// The round step (1, 2 or 5 times a power of ten) that divides [0, max]
// into about `ticks` intervals. REQUIRES: max > 0, ticks >= 1.
double NiceStep(double max, int ticks);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_SVG_PLOT_H_
