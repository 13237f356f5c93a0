#include "kernels/cpu/strided_copy.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

TEST(StridedCopyTest, SliceWithNegativeStepMatchesNaive) {
  // src [3,4]; take rows 2,0 (step -2) and cols 1..3.
  std::vector<int32_t> src(12);
  for (int i = 0; i < 12; ++i) src[i] = i;
  std::vector<int32_t> out(4);
  StridedCopy(&src[2 * 4 + 1], {2, 2}, {-8, 1}, sizeof(int32_t), out.data());
  std::vector<int32_t> want;
  for (int r = 2; r >= 0; r -= 2)
    for (int c = 1; c < 3; ++c) want.push_back(src[r * 4 + c]);
  EXPECT_EQ(out, want);
}

TEST(StridedCopyTest, ZeroStridesBroadcast) {
  std::vector<int64_t> src = {7, 8, 9};
  std::vector<int64_t> out(6);
  StridedCopy(src.data(), {2, 3}, {0, 1}, sizeof(int64_t), out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{7, 8, 9, 7, 8, 9}));
  StridedCopy(src.data(), {3, 2}, {1, 0}, sizeof(int64_t), out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{7, 7, 8, 8, 9, 9}));
}

TEST(StridedCopyTest, ScalarEmptyAndOddElementSize) {
  float one = 3.5f, got = 0;
  StridedCopy(&one, {}, {}, sizeof(float), &got);
  EXPECT_EQ(got, 3.5f);
  StridedCopy(nullptr, {0, 4}, {4, 1}, 4, nullptr);  // nothing to do
  const char src[] = "abcdef";                       // three 2-byte elements
  char out[6];
  StridedCopy(src + 4, {3}, {-1}, 2, out);
  EXPECT_EQ(std::string(out, 6), "efcdab");
}

TEST(StridedCopyTest, DenseStrides) {
  EXPECT_EQ(DenseStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(DenseStrides({}).empty());
}

TEST(StridedCopyTest, BroadcastStrides) {
  EXPECT_EQ(BroadcastStrides({3, 1}, {2, 3, 4}),
            (std::vector<int64_t>{0, 1, 0}));
}

}  // namespace
}  // namespace coalesce::kernels
