#include "kernels/cpu/elementwise.h"

#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

using Dims = std::vector<int64_t>;

int64_t Count(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

std::vector<float> Iota(int64_t n, float start) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + 0.5f * i;
  return v;
}

// Reference: for every output multi-index, map to each operand's index.
float At(const std::vector<float>& data, const Dims& dims,
         const Dims& out_index) {
  const size_t offset = out_index.size() - dims.size();
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t idx = dims[i] == 1 ? 0 : out_index[offset + i];
    flat = flat * dims[i] + idx;
  }
  return data[flat];
}

float Apply(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
  }
  return 0;
}

void CheckCase(BinaryOp op, const Dims& a_dims, const Dims& b_dims,
               const Dims& want_dims) {
  const auto out_dims = BroadcastShapes(a_dims, b_dims);
  ASSERT_TRUE(out_dims.has_value());
  ASSERT_EQ(*out_dims, want_dims);
  const auto a = Iota(Count(a_dims), 1.0f), b = Iota(Count(b_dims), 2.0f);
  std::vector<float> out(Count(want_dims));
  BroadcastBinary(op, a.data(), a_dims, b.data(), b_dims, out.data());
  Dims index(want_dims.size(), 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    const float want = Apply(op, At(a, a_dims, index), At(b, b_dims, index));
    ASSERT_FLOAT_EQ(out[flat], want) << "flat index " << flat;
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < want_dims[d]) break;
      index[d] = 0;
    }
  }
}

TEST(ElementwiseTest, SameShape) {
  CheckCase(BinaryOp::kAdd, {2, 3}, {2, 3}, {2, 3});
  CheckCase(BinaryOp::kDiv, {7}, {7}, {7});
}

TEST(ElementwiseTest, ScalarBothSides) {
  CheckCase(BinaryOp::kSub, {2, 3}, {}, {2, 3});
  CheckCase(BinaryOp::kSub, {}, {4}, {4});
  CheckCase(BinaryOp::kMul, {}, {}, {});
}

TEST(ElementwiseTest, RowAndColumnBroadcast) {
  CheckCase(BinaryOp::kAdd, {4, 5}, {5}, {4, 5});
  CheckCase(BinaryOp::kMul, {4, 5}, {4, 1}, {4, 5});
  CheckCase(BinaryOp::kDiv, {4, 1}, {1, 5}, {4, 5});
}

TEST(ElementwiseTest, HigherRankMixed) {
  CheckCase(BinaryOp::kSub, {2, 1, 3, 1}, {4, 1, 5}, {2, 4, 3, 5});
  CheckCase(BinaryOp::kAdd, {3, 1, 2}, {3, 4, 2}, {3, 4, 2});
  CheckCase(BinaryOp::kMul, {1, 1, 6}, {2, 3, 1}, {2, 3, 6});
}

TEST(ElementwiseTest, LargeParallel) {
  CheckCase(BinaryOp::kAdd, {300, 257}, {257}, {300, 257});
}

// The integer cases C leaves undefined have defined results here.
TEST(ElementwiseTest, IntegerEdgeCases) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> a = {kMax, kMin, 5, kMin, -7};
  const std::vector<int64_t> b = {1, 1, 0, -1, 2};
  std::vector<int64_t> out(5);
  BroadcastBinary<int64_t>(BinaryOp::kAdd, a.data(), {5}, b.data(), {5},
                           out.data());
  EXPECT_EQ(out[0], kMin);  // wraps
  BroadcastBinary<int64_t>(BinaryOp::kSub, a.data(), {5}, b.data(), {5},
                           out.data());
  EXPECT_EQ(out[1], kMax);  // wraps
  BroadcastBinary<int64_t>(BinaryOp::kDiv, a.data(), {5}, b.data(), {5},
                           out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{kMax, kMin, 0, kMin, -3}));
  const std::vector<int32_t> x = {std::numeric_limits<int32_t>::max(), 9};
  const std::vector<int32_t> y = {2, -4};
  std::vector<int32_t> z(2);
  BroadcastBinary<int32_t>(BinaryOp::kMul, x.data(), {2}, y.data(), {2},
                           z.data());
  EXPECT_EQ(z, (std::vector<int32_t>{-2, -36}));  // max * 2 wraps to -2
}

TEST(ElementwiseTest, ZeroSizedAndIncompatible) {
  CheckCase(BinaryOp::kAdd, {0, 3}, {3}, {0, 3});
  EXPECT_FALSE(BroadcastShapes({2, 3}, {4}).has_value());
  EXPECT_FALSE(BroadcastShapes({2, 3}, {3, 3}).has_value());
}

}  // namespace
}  // namespace coalesce::kernels
