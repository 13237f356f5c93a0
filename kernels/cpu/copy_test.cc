#include "kernels/cpu/copy.h"

#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

TEST(ConcatTest, AlongInnerAxis) {
  // [2,2] ++ [2,1] along axis 1.
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6};
  std::vector<float> out(6);
  Concat({a.data(), b.data()}, {2 * sizeof(float), 1 * sizeof(float)}, 2,
         out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 5, 3, 4, 6}));
}

TEST(ConcatTest, AlongOuterAxis) {
  const std::vector<float> a = {1, 2}, b = {3, 4, 5, 6};
  std::vector<float> out(6);
  Concat({a.data(), b.data()}, {2 * sizeof(float), 4 * sizeof(float)}, 1,
         out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(CopyBytesTest, ZeroLengthAndSelf) {
  CopyBytes(nullptr, 0, nullptr);
  std::vector<int> v = {1, 2};
  CopyBytes(v.data(), sizeof(int) * 2, v.data());
  EXPECT_EQ(v, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace coalesce::kernels
