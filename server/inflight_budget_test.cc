#include "server/inflight_budget.h"

#include <filesystem>
#include <fstream>
#include <utility>

#include "gtest/gtest.h"
#include "server/resource_limits.h"

namespace coalesce {
namespace {

TEST(InflightBudgetTest, RefusesAtOnceBeyondTheLimitAndLeasesGiveBack) {
  InflightBudget budget(100);
  auto a = budget.Acquire(60);
  ASSERT_TRUE(a.ok());
  auto b = budget.Acquire(41);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(b.status().message().find("holds 60 bytes"), std::string::npos);
  EXPECT_NE(b.status().message().find("41 bytes"), std::string::npos);
  auto c = budget.Acquire(40);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(budget.held(), 100);
  {
    InflightBudget::Lease moved = *std::move(a);
    EXPECT_EQ(budget.held(), 100);
  }  // `moved` gives its 60 back; the moved-from lease gives nothing.
  EXPECT_EQ(budget.held(), 40);
  a = absl::StatusOr<InflightBudget::Lease>();  // destroys nothing twice
  EXPECT_EQ(budget.held(), 40);
  EXPECT_FALSE(budget.Acquire(101).ok()) << "larger than the whole budget";
}

TEST(InflightBudgetTest, ZeroMeansNoLimit) {
  InflightBudget budget(0);
  auto a = budget.Acquire(int64_t{1} << 50);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(budget.Acquire(int64_t{1} << 50).ok());
}

TEST(ResourceLimitsTest, CgroupLimitsWhenSetElseTheMachine) {
  const std::string root = testing::TempDir() + "/cgroup_test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/memory");
  std::filesystem::create_directories(root + "/cpu");
  const int64_t physical = MemoryLimitBytes(root);  // no files: the machine
  EXPECT_GT(physical, int64_t{1} << 26);
  const int cpus = CpuLimit(root);
  EXPECT_GE(cpus, 1);
  // cgroup v1: "unlimited" is a huge number, no quota is -1.
  std::ofstream(root + "/memory/memory.limit_in_bytes")
      << "9223372036854771712\n";
  std::ofstream(root + "/cpu/cpu.cfs_quota_us") << "-1\n";
  std::ofstream(root + "/cpu/cpu.cfs_period_us") << "100000\n";
  EXPECT_EQ(MemoryLimitBytes(root), physical);
  EXPECT_EQ(CpuLimit(root), cpus);
  // cgroup v2 (memory.current marks it): 1 GiB and half a core.
  std::ofstream(root + "/memory.current") << "4096\n";
  std::ofstream(root + "/memory.max") << "1073741824\n";
  std::ofstream(root + "/cpu.max") << "50000 100000\n";
  EXPECT_EQ(MemoryLimitBytes(root), 1073741824);
  EXPECT_EQ(CpuLimit(root), 1) << "a fraction of a core rounds up to one";
  std::ofstream(root + "/cpu.max") << "max 100000\n";
  EXPECT_EQ(CpuLimit(root), cpus);
}

}  // namespace
}  // namespace coalesce
