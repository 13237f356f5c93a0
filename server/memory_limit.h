// How much memory this process may use: the cgroup's limit (v2 memory.max,
// v1 memory.limit_in_bytes) when there is one, else the machine's physical
// memory. Read once per call from /sys and sysconf; thread-safe.
#ifndef COALESCE_SERVER_MEMORY_LIMIT_H_
#define COALESCE_SERVER_MEMORY_LIMIT_H_

#include <cstdint>
#include <filesystem>

namespace coalesce {

// The smaller of the cgroup limit under `cgroup_root` (no limit: "max", or
// v1's huge sentinel) and physical memory.
int64_t MemoryLimitBytes(
    const std::filesystem::path& cgroup_root = "/sys/fs/cgroup");

}  // namespace coalesce

#endif  // COALESCE_SERVER_MEMORY_LIMIT_H_
