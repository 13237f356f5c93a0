#include "engine/arena_planner.h"

#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(ArenaPlannerTest, ReusesFreedBlocks) {
  ArenaPlanner planner;
  const size_t a = planner.Allocate(1000);
  const size_t b = planner.Allocate(1000);
  EXPECT_NE(a, b);
  planner.Free(a, 1000);
  const size_t c = planner.Allocate(500);
  EXPECT_EQ(c, a);
  EXPECT_EQ(planner.peak_bytes(), 2048u);
}

TEST(ArenaPlannerTest, CoalescesNeighbours) {
  ArenaPlanner planner;
  const size_t a = planner.Allocate(64);
  const size_t b = planner.Allocate(64);
  const size_t c = planner.Allocate(64);
  planner.Free(a, 64);
  planner.Free(b, 64);
  EXPECT_EQ(planner.Allocate(128), a);
  (void)c;
  EXPECT_EQ(planner.peak_bytes(), 192u);
}

TEST(ArenaPlannerTest, GrowsTrailingFreeBlock) {
  ArenaPlanner planner;
  const size_t a = planner.Allocate(64);
  const size_t b = planner.Allocate(64);
  planner.Free(b, 64);
  EXPECT_EQ(planner.Allocate(256), b);
  EXPECT_EQ(planner.peak_bytes(), 64u + 256u);
  (void)a;
}

TEST(ArenaPlannerTest, OffsetsAreAligned) {
  ArenaPlanner planner;
  planner.Allocate(3);
  EXPECT_EQ(planner.Allocate(5) % ArenaPlanner::kAlignment, 0u);
}

}  // namespace
}  // namespace coalesce
