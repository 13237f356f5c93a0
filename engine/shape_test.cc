#include "engine/shape.h"

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(ElementCountTest, CountsAndRefuses) {
  EXPECT_EQ(ElementCount({}), 1);
  EXPECT_EQ(ElementCount({2, 3, 4}), 24);
  EXPECT_EQ(ElementCount({2, 0, 4}), 0);
  EXPECT_EQ(ElementCount({2, -1}), std::nullopt);
  // Up to 2^40 elements; beyond, even when a zero dim empties the tensor.
  EXPECT_EQ(ElementCount({int64_t{1} << 20, int64_t{1} << 20}),
            int64_t{1} << 40);
  EXPECT_EQ(ElementCount({int64_t{1} << 20, (int64_t{1} << 20) + 1}),
            std::nullopt);
  EXPECT_EQ(ElementCount({0, int64_t{1} << 62}), std::nullopt);
  EXPECT_EQ(ElementCount({0, int64_t{1} << 32, int64_t{1} << 32}),
            std::nullopt);
  EXPECT_EQ(ElementCount({0, int64_t{1} << 30}), 0);
}

}  // namespace
}  // namespace coalesce
