// CPU time of this process and of the calling thread (getrusage), to tell
// whether the load generator itself is the bottleneck.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_CPU_USAGE_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_CPU_USAGE_H_

namespace coalesce::bench {

// User + system CPU seconds of the whole process since it started.
double ProcessCpuSeconds();

// User + system CPU seconds of the calling thread since it started.
double ThreadCpuSeconds();

// Cores this process may run on (at least 1).
int AvailableCores();

// The fraction of a full machine this process keeps busy above which the
// client may be the bottleneck, and the same for a single client thread
// (of one core).
inline constexpr double kClientSaturation = 0.8;

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_CPU_USAGE_H_
