#include "benchmarks/coalesce_bench/cpu_usage.h"

#include <sched.h>
#include <sys/resource.h>

#include <thread>

namespace coalesce::bench {
namespace {

double Seconds(const rusage& usage) {
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) /
             1e6;
}

double Usage(int who) {
  rusage usage{};
  if (getrusage(who, &usage) != 0) return 0;
  return Seconds(usage);
}

}  // namespace

double ProcessCpuSeconds() { return Usage(RUSAGE_SELF); }

double ThreadCpuSeconds() { return Usage(RUSAGE_THREAD); }

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace coalesce::bench
