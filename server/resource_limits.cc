#include "server/resource_limits.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "server/process_stats.h"

namespace coalesce {
namespace {

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return INT64_MAX;
  return static_cast<int64_t>(pages) * page_size;
}

int AvailableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

int64_t MemoryLimitBytes(const std::string& cgroup_root) {
  const ProcessStats stats = ReadProcessStats("/proc/self", cgroup_root);
  int64_t limit = PhysicalMemoryBytes();
  if (stats.cgroup_memory_limit.has_value() &&
      *stats.cgroup_memory_limit < static_cast<uint64_t>(limit)) {
    limit = static_cast<int64_t>(*stats.cgroup_memory_limit);
  }
  return limit;
}

int CpuLimit(const std::string& cgroup_root) {
  const ProcessStats stats = ReadProcessStats("/proc/self", cgroup_root);
  int cpus = AvailableCpus();
  if (stats.cgroup_cpu_limit_cores.has_value()) {
    const int quota =
        static_cast<int>(std::ceil(*stats.cgroup_cpu_limit_cores));
    cpus = std::min(cpus, std::max(1, quota));
  }
  return cpus;
}

}  // namespace coalesce
