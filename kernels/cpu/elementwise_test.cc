#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>
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
    case BinaryOp::kMod:
      return x - std::floor(x / y) * y;
    case BinaryOp::kFmod:
      return std::fmod(x, y);
    case BinaryOp::kMax:
      return std::max(x, y);
    case BinaryOp::kMin:
      return std::min(x, y);
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

template <typename T>
std::vector<T> Apply(BinaryOp op, const std::vector<T>& a,
                     const std::vector<T>& b) {
  std::vector<T> out(a.size());
  const std::vector<int64_t> dims = {static_cast<int64_t>(a.size())};
  BroadcastBinary<T>(op, a.data(), dims, b.data(), dims, out.data());
  return out;
}

TEST(ElementwiseTest, ModIsFlooredAndFmodTruncated) {
  // Python's % (sign of the divisor) and C's % (sign of the dividend); a
  // zero divisor and MIN % -1 give 0 instead of trapping.
  const std::vector<int64_t> a = {
      7, -7, 7, -7, 5, std::numeric_limits<int64_t>::min(), 0};
  const std::vector<int64_t> b = {3, 3, -3, -3, 0, -1, 4};
  std::vector<int64_t> out(a.size());
  BroadcastBinary<int64_t>(BinaryOp::kMod, a.data(), {7}, b.data(), {7},
                           out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, -2, -1, 0, 0, 0}));
  BroadcastBinary<int64_t>(BinaryOp::kFmod, a.data(), {7}, b.data(), {7},
                           out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{1, -1, 1, -1, 0, 0, 0}));
  const std::vector<uint8_t> ua = {200, 7}, ub = {7, 0};
  std::vector<uint8_t> uout(2);
  BroadcastBinary<uint8_t>(BinaryOp::kMod, ua.data(), {2}, ub.data(), {2},
                           uout.data());
  EXPECT_EQ(uout, (std::vector<uint8_t>{4, 0}));
  const std::vector<double> fa = {5.5, -5.5}, fb = {-2.0, 2.0};
  std::vector<double> fout(2);
  BroadcastBinary<double>(BinaryOp::kMod, fa.data(), {2}, fb.data(), {2},
                          fout.data());
  EXPECT_EQ(fout, (std::vector<double>{-0.5, 0.5}));
  BroadcastBinary<double>(BinaryOp::kFmod, fa.data(), {2}, fb.data(), {2},
                          fout.data());
  EXPECT_EQ(fout, (std::vector<double>{1.5, -1.5}));
}

TEST(ElementwiseTest, SignOfIntegersAndFloats) {
  const std::vector<int32_t> a = {-5, 0, 9};
  std::vector<int32_t> out(3);
  UnaryArithmetic(UnaryArithmeticOp::kSign, a.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{-1, 0, 1}));
  const std::vector<double> f = {-0.5, 0.0, 2.0, std::nan("")};
  std::vector<double> fout(4);
  UnaryArithmetic(UnaryArithmeticOp::kSign, f.data(), 4, fout.data());
  EXPECT_EQ(fout[0], -1.0);
  EXPECT_EQ(fout[1], 0.0);
  EXPECT_EQ(fout[2], 1.0);
  EXPECT_TRUE(std::isnan(fout[3]));
}

TEST(ElementwiseTest, IntegerAbsAndNegWrap) {
  const std::vector<int8_t> a = {-5, 0, 9, -128};
  std::vector<int8_t> out(4);
  UnaryArithmetic(UnaryArithmeticOp::kAbs, a.data(), 4, out.data());
  EXPECT_EQ(out, (std::vector<int8_t>{5, 0, 9, -128}));
  UnaryArithmetic(UnaryArithmeticOp::kNeg, a.data(), 4, out.data());
  EXPECT_EQ(out, (std::vector<int8_t>{5, 0, -9, -128}));
}

TEST(ElementwiseTest, EightBitIntegersWrap) {
  const std::vector<int8_t> a = {127, -128, 100, -128, 7, -7};
  const std::vector<int8_t> b = {1, 1, 3, -1, 0, 2};
  EXPECT_EQ(Apply(BinaryOp::kAdd, a, b),
            (std::vector<int8_t>{-128, -127, 103, 127, 7, -5}));
  EXPECT_EQ(Apply(BinaryOp::kSub, a, b),
            (std::vector<int8_t>{126, 127, 97, -127, 7, -9}));
  EXPECT_EQ(Apply(BinaryOp::kMul, a, b),
            (std::vector<int8_t>{127, -128, 44, -128, 0, -14}));
  EXPECT_EQ(Apply(BinaryOp::kDiv, a, b),
            (std::vector<int8_t>{127, -128, 33, -128, 0, -3}));
  const std::vector<uint8_t> u = {250, 3, 16, 200, 9};
  const std::vector<uint8_t> v = {10, 5, 16, 0, 255};
  EXPECT_EQ(Apply(BinaryOp::kAdd, u, v),
            (std::vector<uint8_t>{4, 8, 32, 200, 8}));
  EXPECT_EQ(Apply(BinaryOp::kSub, u, v),
            (std::vector<uint8_t>{240, 254, 0, 200, 10}));
  EXPECT_EQ(Apply(BinaryOp::kMul, u, v),
            (std::vector<uint8_t>{196, 15, 0, 0, 247}));
  EXPECT_EQ(Apply(BinaryOp::kDiv, u, v),
            (std::vector<uint8_t>{25, 0, 1, 0, 0}));
}

TEST(ElementwiseTest, SixteenBitIntegersWrap) {
  // 65535 * 65535 would overflow int if computed after promotion.
  const std::vector<uint16_t> u = {65535, 1, 65535, 7};
  const std::vector<uint16_t> v = {65535, 2, 1, 0};
  EXPECT_EQ(Apply(BinaryOp::kMul, u, v),
            (std::vector<uint16_t>{1, 2, 65535, 0}));
  EXPECT_EQ(Apply(BinaryOp::kSub, u, v),
            (std::vector<uint16_t>{0, 65535, 65534, 7}));
  EXPECT_EQ(Apply(BinaryOp::kDiv, u, v),
            (std::vector<uint16_t>{1, 0, 65535, 0}));
  const std::vector<int16_t> a = {32767, -32768, 300, -32768};
  const std::vector<int16_t> b = {1, -1, 300, 2};
  EXPECT_EQ(Apply(BinaryOp::kAdd, a, b),
            (std::vector<int16_t>{-32768, 32767, 600, -32766}));
  EXPECT_EQ(Apply(BinaryOp::kMul, a, b),
            (std::vector<int16_t>{32767, -32768, 24464, 0}));
  EXPECT_EQ(Apply(BinaryOp::kDiv, a, b),
            (std::vector<int16_t>{32767, -32768, 1, -16384}));
}

// Unsigned divisors with all bits set are not -1.
TEST(ElementwiseTest, WideUnsignedIntegers) {
  constexpr uint32_t kMax32 = std::numeric_limits<uint32_t>::max();
  const std::vector<uint32_t> a = {kMax32, 10, kMax32 - 1, 0};
  const std::vector<uint32_t> b = {kMax32, kMax32, 2, 1};
  EXPECT_EQ(Apply(BinaryOp::kDiv, a, b),
            (std::vector<uint32_t>{1, 0, kMax32 / 2, 0}));
  EXPECT_EQ(Apply(BinaryOp::kAdd, a, b),
            (std::vector<uint32_t>{kMax32 - 1, 9, 0, 1}));
  EXPECT_EQ(Apply(BinaryOp::kSub, std::vector<uint32_t>{0}, {1}),
            (std::vector<uint32_t>{kMax32}));
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  const std::vector<uint64_t> c = {kMax64, 1ull << 63, 12};
  const std::vector<uint64_t> d = {kMax64, 2, 0};
  EXPECT_EQ(Apply(BinaryOp::kDiv, c, d),
            (std::vector<uint64_t>{1, 1ull << 62, 0}));
  EXPECT_EQ(Apply(BinaryOp::kMul, c, d), (std::vector<uint64_t>{1, 0, 0}));
  EXPECT_EQ(Apply(BinaryOp::kAdd, c, d),
            (std::vector<uint64_t>{kMax64 - 1, (1ull << 63) + 2, 12}));
}

TEST(ElementwiseTest, DoubleKeepsPrecisionAndIeeeDivision) {
  const std::vector<double> a = {0.1, 1e300, 1.0, -1.0};
  const std::vector<double> b = {0.2, 1e300, 0.0, 3.0};
  const std::vector<double> sum = Apply(BinaryOp::kAdd, a, b);
  EXPECT_EQ(sum[0], 0.30000000000000004);
  EXPECT_EQ(sum[1], 2e300);
  const std::vector<double> q = Apply(BinaryOp::kDiv, a, b);
  EXPECT_EQ(q[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(q[3], -1.0 / 3.0);
  EXPECT_EQ(Apply(BinaryOp::kMul, a, b)[1],
            std::numeric_limits<double>::infinity());
}

TEST(ElementwiseTest, ZeroSizedAndIncompatible) {
  CheckCase(BinaryOp::kAdd, {0, 3}, {3}, {0, 3});
  EXPECT_FALSE(BroadcastShapes({2, 3}, {4}).has_value());
  EXPECT_FALSE(BroadcastShapes({2, 3}, {3, 3}).has_value());
}

}  // namespace
}  // namespace coalesce::kernels
