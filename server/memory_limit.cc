#include "server/memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>

namespace coalesce {
namespace {

// The number in `path`; nullopt when absent, "max" or not a number.
std::optional<int64_t> ReadLimit(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size() || value <= 0) return std::nullopt;
    return value;
  } catch (...) {
    return std::nullopt;
  }
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return INT64_MAX;
  return static_cast<int64_t>(pages) * page_size;
}

}  // namespace

int64_t MemoryLimitBytes(const std::filesystem::path& cgroup_root) {
  int64_t limit = PhysicalMemoryBytes();
  for (const char* file : {"memory.max", "memory/memory.limit_in_bytes"}) {
    // v1's "unlimited" is a huge page-aligned number; min() absorbs it.
    if (auto value = ReadLimit(cgroup_root / file)) {
      limit = std::min(limit, *value);
    }
  }
  return limit;
}

}  // namespace coalesce
