// What this process may use of the machine: the cgroup's memory and CPU
// limits (read through process_stats.h, v2 or v1) where there are any, else
// the machine's physical memory and cores. Read afresh on every call;
// thread-safe.
#ifndef COALESCE_SERVER_RESOURCE_LIMITS_H_
#define COALESCE_SERVER_RESOURCE_LIMITS_H_

#include <cstdint>
#include <string>

namespace coalesce {

// The smaller of the cgroup memory limit under `cgroup_root` and physical
// memory.
int64_t MemoryLimitBytes(const std::string& cgroup_root = "/sys/fs/cgroup");

// Cores this process may keep busy: the CPUs it may run on (affinity),
// capped by the cgroup's CPU quota rounded up; at least 1.
int CpuLimit(const std::string& cgroup_root = "/sys/fs/cgroup");

}  // namespace coalesce

#endif  // COALESCE_SERVER_RESOURCE_LIMITS_H_
