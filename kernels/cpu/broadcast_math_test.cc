#include "kernels/cpu/broadcast_math.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

int64_t Count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<float> Ramp(int64_t n, float start, float step) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * i;
  return v;
}

// Element of `v` (shape s) at output coordinate `idx`, NumPy broadcasting.
float At(const std::vector<float>& v, const std::vector<int64_t>& s,
         const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + (s[d] == 1 ? 0 : idx[idx.size() - s.size() + d]);
  return v[f];
}

double Ref(MathBinaryOp op, double a, double b) {
  switch (op) {
    case MathBinaryOp::kAdd:
      return a + b;
    case MathBinaryOp::kMax:
      return a > b ? a : b;
    case MathBinaryOp::kMin:
      return a < b ? a : b;
    case MathBinaryOp::kPow:
      return std::pow(a, b);
    case MathBinaryOp::kPRelu:
      return a < 0 ? a * b : a;
  }
  return 0;
}

void Check(MathBinaryOp op, const std::vector<int64_t>& as,
           const std::vector<int64_t>& bs, const std::vector<int64_t>& os) {
  const auto a = Ramp(Count(as), 0.1f, 0.37f);
  const auto b = Ramp(Count(bs), -1.3f, 0.21f);
  std::vector<float> out(Count(os));
  BroadcastMath(op, a.data(), as, b.data(), bs, out.data());
  for (int64_t flat = 0; flat < Count(os); ++flat) {
    std::vector<int64_t> idx(os.size());
    for (int64_t d = os.size() - 1, r = flat; d >= 0; --d) {
      idx[d] = r % os[d];
      r /= os[d];
    }
    ASSERT_NEAR(out[flat], Ref(op, At(a, as, idx), At(b, bs, idx)), 1e-4)
        << static_cast<int>(op) << " at " << flat;
  }
}

TEST(BroadcastMathTest, AllOpsAndShapes) {
  for (MathBinaryOp op :
       {MathBinaryOp::kAdd, MathBinaryOp::kMax, MathBinaryOp::kMin,
        MathBinaryOp::kPow, MathBinaryOp::kPRelu}) {
    Check(op, {2, 3}, {2, 3}, {2, 3});
    Check(op, {4, 5}, {5}, {4, 5});
    Check(op, {4, 5}, {}, {4, 5});
    Check(op, {3, 1}, {1, 4}, {3, 4});
    Check(op, {2, 1, 3}, {4, 1}, {2, 4, 3});
    Check(op, {}, {}, {});
  }
}

TEST(BroadcastMathTest, MaxMinPropagateNan) {
  const std::vector<float> a = {NAN, 1.0f}, b = {0.0f, NAN};
  std::vector<float> out(2);
  BroadcastMath(MathBinaryOp::kMax, a.data(), {2}, b.data(), {2}, out.data());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  BroadcastMath(MathBinaryOp::kMin, a.data(), {2}, b.data(), {2}, out.data());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
}

TEST(BroadcastMathTest, BroadcastToAndInPlaceAccumulate) {
  const std::vector<float> row = {1, 2, 3};
  std::vector<float> out(6);
  BroadcastTo(row.data(), {1, 3}, {2, 3}, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  const std::vector<float> col = {10, 20};
  BroadcastMath(MathBinaryOp::kAdd, out.data(), {2, 3}, col.data(), {2, 1},
                out.data());
  EXPECT_EQ(out, (std::vector<float>{11, 12, 13, 21, 22, 23}));
  Scale(out.data(), 6, 0.5f);
  EXPECT_EQ(out[5], 11.5f);
}

}  // namespace
}  // namespace coalesce::kernels
