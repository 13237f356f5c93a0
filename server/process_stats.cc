#include "server/process_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coalesce {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<uint64_t> ReadUint(const std::string& path) {
  auto text = ReadFile(path);
  uint64_t value = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return std::nullopt;
  }
  return value;
}

// v1 writes an unlimited memory limit as the largest page-aligned int64.
constexpr uint64_t kUnlimitedAbove = uint64_t{1} << 60;

}  // namespace

std::optional<double> ParseProcStatCpuSeconds(const std::string& stat,
                                              long ticks_per_second) {
  // The command name (field 2) may hold spaces and parentheses: fields
  // after it start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) return std::nullopt;
  std::vector<std::string> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); utime is field 14, stime 15.
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return std::nullopt;
  }
  return static_cast<double>(utime + stime) / ticks_per_second;
}

std::optional<double> ParseCpuMax(const std::string& cpu_max) {
  std::vector<std::string> parts = absl::StrSplit(
      absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  double quota = 0, period = 0;
  if (parts.size() != 2 || parts[0] == "max" ||
      !absl::SimpleAtod(parts[0], &quota) ||
      !absl::SimpleAtod(parts[1], &period) || quota <= 0 || period <= 0) {
    return std::nullopt;
  }
  return quota / period;
}

std::optional<uint64_t> ParseMemoryLimit(const std::string& text) {
  uint64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value) ||
      value >= kUnlimitedAbove) {
    return std::nullopt;
  }
  return value;
}

ProcessStats ReadProcessStats(const std::string& proc_self,
                              const std::string& cgroup_root) {
  ProcessStats stats;
  if (auto stat = ReadFile(proc_self + "/stat")) {
    stats.cpu_seconds = ParseProcStatCpuSeconds(*stat, sysconf(_SC_CLK_TCK));
  }
  if (auto statm = ReadFile(proc_self + "/statm")) {
    std::vector<std::string> fields =
        absl::StrSplit(*statm, ' ', absl::SkipEmpty());
    uint64_t pages = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &pages)) {
      stats.resident_bytes =
          pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    }
  }
  if (auto current = ReadUint(cgroup_root + "/memory.current")) {  // v2
    stats.cgroup_memory_bytes = current;
    if (auto max = ReadFile(cgroup_root + "/memory.max")) {
      stats.cgroup_memory_limit = ParseMemoryLimit(*max);
    }
    if (auto cpu = ReadFile(cgroup_root + "/cpu.max")) {
      stats.cgroup_cpu_limit_cores = ParseCpuMax(*cpu);
    }
    return stats;
  }
  stats.cgroup_memory_bytes =
      ReadUint(cgroup_root + "/memory/memory.usage_in_bytes");
  if (auto limit = ReadFile(cgroup_root + "/memory/memory.limit_in_bytes")) {
    stats.cgroup_memory_limit = ParseMemoryLimit(*limit);
  }
  auto quota = ReadFile(cgroup_root + "/cpu/cpu.cfs_quota_us");
  auto period = ReadFile(cgroup_root + "/cpu/cpu.cfs_period_us");
  if (quota && period) {
    stats.cgroup_cpu_limit_cores =
        ParseCpuMax(std::string(absl::StripAsciiWhitespace(*quota)) + " " +
                    std::string(absl::StripAsciiWhitespace(*period)));
  }
  return stats;
}

}  // namespace coalesce
