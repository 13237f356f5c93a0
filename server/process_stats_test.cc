#include "server/process_stats.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(ProcessStatsTest, ParsesProcStatEvenWithParenthesesInTheName) {
  const std::string stat =
      "1234 (coalesce (x) srv) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 "
      "20 0 9 0 100 123456 789 18446744073709551615";
  ASSERT_TRUE(ParseProcStatCpuSeconds(stat, 100).has_value());
  EXPECT_DOUBLE_EQ(*ParseProcStatCpuSeconds(stat, 100),
                   3.0);  // (250 + 50) / 100
  EXPECT_FALSE(ParseProcStatCpuSeconds("garbage", 100).has_value());
}

TEST(ProcessStatsTest, CpuAndMemoryLimits) {
  EXPECT_FALSE(ParseCpuMax("max 100000\n").has_value());
  EXPECT_DOUBLE_EQ(*ParseCpuMax("150000 100000\n"), 1.5);
  EXPECT_FALSE(ParseCpuMax("-1 100000").has_value());  // v1: no quota
  EXPECT_FALSE(ParseMemoryLimit("max\n").has_value());
  EXPECT_FALSE(
      ParseMemoryLimit("9223372036854771712\n").has_value());  // v1 none
  EXPECT_EQ(*ParseMemoryLimit("2147483648\n"), 2147483648u);
}

TEST(ProcessStatsTest, ReadsCgroupV2) {
  const fs::path root = fs::path(testing::TempDir()) / "cg2";
  Write(root / "memory.current", "1048576\n");
  Write(root / "memory.max", "4194304\n");
  Write(root / "cpu.max", "200000 100000\n");
  const ProcessStats s = ReadProcessStats("/proc/self", root.string());
  EXPECT_EQ(s.cgroup_memory_bytes, 1048576u);
  EXPECT_EQ(s.cgroup_memory_limit, 4194304u);
  EXPECT_DOUBLE_EQ(*s.cgroup_cpu_limit_cores, 2.0);
  EXPECT_TRUE(s.cpu_seconds.has_value());
  EXPECT_GT(*s.resident_bytes, 0u);
}

TEST(ProcessStatsTest, ReadsCgroupV1AndLeavesUnlimitedEmpty) {
  const fs::path root = fs::path(testing::TempDir()) / "cg1";
  Write(root / "memory" / "memory.usage_in_bytes", "5000\n");
  Write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
  Write(root / "cpu" / "cpu.cfs_quota_us", "-1\n");
  Write(root / "cpu" / "cpu.cfs_period_us", "100000\n");
  const ProcessStats s = ReadProcessStats("/proc/self", root.string());
  EXPECT_EQ(s.cgroup_memory_bytes, 5000u);
  EXPECT_FALSE(s.cgroup_memory_limit.has_value());
  EXPECT_FALSE(s.cgroup_cpu_limit_cores.has_value());
}

TEST(ProcessStatsTest, NothingReadableLeavesEverythingEmpty) {
  const ProcessStats s = ReadProcessStats("/nonexistent", "/nonexistent");
  EXPECT_FALSE(s.cpu_seconds.has_value());
  EXPECT_FALSE(s.resident_bytes.has_value());
  EXPECT_FALSE(s.cgroup_memory_bytes.has_value());
}

}  // namespace
}  // namespace coalesce
