#include "kernels/cpu/unary_math.h"

#include <cmath>
#include <functional>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

std::vector<float> Inputs() {
  std::vector<float> v;
  for (int i = -200; i <= 200; ++i) v.push_back(i * 0.05f);
  v.push_back(-100.0f);
  v.push_back(100.0f);
  return v;
}

void Check(UnaryOp op, UnaryParams p, const std::function<double(double)>& ref,
           bool positive_only = false) {
  std::vector<float> in = Inputs();
  if (positive_only) {
    for (float& x : in) x = std::fabs(x) + 0.01f;
  }
  std::vector<float> out(in.size());
  Unary(op, p, in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = ref(in[i]);
    if (std::isinf(static_cast<float>(want))) {  // overflows float
      EXPECT_EQ(out[i], static_cast<float>(want)) << in[i];
      continue;
    }
    EXPECT_NEAR(out[i], want, 1e-5 * std::max(1.0, std::fabs(want)))
        << static_cast<int>(op) << " at " << in[i];
  }
}

TEST(UnaryMathTest, PlainFunctions) {
  Check(
      UnaryOp::kSqrt, {}, [](double x) { return std::sqrt(x); }, true);
  Check(
      UnaryOp::kLog, {}, [](double x) { return std::log(x); }, true);
  Check(
      UnaryOp::kReciprocal, {}, [](double x) { return 1 / x; }, true);
  Check(UnaryOp::kExp, {}, [](double x) { return std::exp(x); });
  Check(UnaryOp::kNeg, {}, [](double x) { return -x; });
  Check(UnaryOp::kAbs, {}, [](double x) { return x < 0 ? -x : x; });
  Check(UnaryOp::kErf, {}, [](double x) { return std::erf(x); });
  Check(UnaryOp::kSoftsign, {},
        [](double x) { return x / (1 + std::fabs(x)); });
}

TEST(UnaryMathTest, SoftplusIsStableForLargeInputs) {
  Check(UnaryOp::kSoftplus, {},
        [](double x) { return x > 30 ? x : std::log(1 + std::exp(x)); });
}

TEST(UnaryMathTest, ParameterizedActivations) {
  Check(UnaryOp::kLeakyRelu, {.alpha = 0.3f},
        [](double x) { return x >= 0 ? x : 0.3 * x; });
  Check(UnaryOp::kElu, {.alpha = 0.7f},
        [](double x) { return x >= 0 ? x : 0.7 * (std::exp(x) - 1); });
  Check(UnaryOp::kSelu, {.alpha = 1.5f, .gamma = 2.0f},
        [](double x) { return 2.0 * (x > 0 ? x : 1.5 * (std::exp(x) - 1)); });
  Check(UnaryOp::kHardSigmoid, {.alpha = 0.25f, .beta = 0.4f},
        [](double x) { return std::fmin(1, std::fmax(0, 0.25 * x + 0.4)); });
}

TEST(UnaryMathTest, GeluExactAndTanh) {
  Check(UnaryOp::kGelu, {},
        [](double x) { return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))); });
  Check(UnaryOp::kGeluTanh, {}, [](double x) {
    const double k = std::sqrt(2 / M_PI);
    return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
  });
}

TEST(UnaryMathTest, ClipBoundsAndNan) {
  std::vector<float> in = {-3, -1, 0, 1, 3, NAN};
  std::vector<float> out(in.size());
  Clip(in.data(), in.size(), -1.5f, 2.0f, out.data());
  EXPECT_EQ(out[0], -1.5f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[4], 2.0f);
  EXPECT_TRUE(std::isnan(out[5]));
}

TEST(UnaryMathTest, LargeArrayInPlace) {
  std::vector<float> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = (i % 11) - 5.0f;
  Unary(UnaryOp::kNeg, {}, data.data(), data.size(), data.data());
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], 5.0f - (i % 11));
}

}  // namespace
}  // namespace coalesce::kernels
