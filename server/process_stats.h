// ProcessStats: the server process's CPU time and memory, and the limits
// and usage of its container, read from /proc and the cgroup filesystem
// (v2's unified files, or v1's memory and cpu controllers), for the metrics
// endpoint. Anything unreadable (no cgroup mounted, no limit set) is left
// empty rather than guessed.
#ifndef COALESCE_SERVER_PROCESS_STATS_H_
#define COALESCE_SERVER_PROCESS_STATS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace coalesce {

struct ProcessStats {
  std::optional<double> cpu_seconds;             // user + system, this process
  std::optional<uint64_t> resident_bytes;        // this process
  std::optional<uint64_t> cgroup_memory_bytes;   // the container's usage
  std::optional<uint64_t> cgroup_memory_limit;   // empty: unlimited
  std::optional<double> cgroup_cpu_limit_cores;  // quota / period; empty: none
};

// Reads everything now. `proc_self` and `cgroup_root` are for tests.
ProcessStats ReadProcessStats(
    const std::string& proc_self = "/proc/self",
    const std::string& cgroup_root = "/sys/fs/cgroup");

// Parsers, exposed for tests.
// /proc/self/stat: utime + stime (fields 14 and 15) in seconds.
std::optional<double> ParseProcStatCpuSeconds(const std::string& stat,
                                              long ticks_per_second);
// cgroup v2 cpu.max ("max 100000" or "150000 100000"): cores, empty for max.
std::optional<double> ParseCpuMax(const std::string& cpu_max);
// A memory limit (v2 memory.max "max" or bytes; v1 limit_in_bytes, where a
// value near 2^63 means none): empty when unlimited.
std::optional<uint64_t> ParseMemoryLimit(const std::string& text);

}  // namespace coalesce

#endif  // COALESCE_SERVER_PROCESS_STATS_H_
