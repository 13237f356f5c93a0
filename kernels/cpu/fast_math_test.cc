#include "kernels/cpu/fast_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// fn over `in` in a loop the compiler vectorizes, as the kernels call it.
template <typename Fn>
std::vector<float> Apply(Fn fn, const std::vector<float>& in) {
  std::vector<float> out(in.size());
#pragma omp simd
  for (size_t i = 0; i < in.size(); ++i) out[i] = fn(in[i]);
  return out;
}

// points + 1 evenly spaced values from lo to hi.
std::vector<float> Grid(float lo, float hi, int points) {
  std::vector<float> v;
  for (int i = 0; i <= points; ++i) v.push_back(lo + (hi - lo) * i / points);
  return v;
}

TEST(FastMathTest, ExpRelativeErrorOnItsRange) {
  const std::vector<float> in = Grid(-87.0f, 88.0f, 2000000);
  const std::vector<float> out = Apply(FastExp, in);
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = std::exp(double{in[i]});
    worst = std::max(worst, std::fabs(out[i] - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
}

TEST(FastMathTest, ExpOutsideItsRangeAndSpecialValues) {
  const std::vector<float> in = {-87.5f, -1000.0f, -INFINITY, 88.5f,
                                 1e6f,   INFINITY, 0.0f,      NAN};
  const std::vector<float> out = Apply(FastExp, in);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], INFINITY);
  EXPECT_EQ(out[4], INFINITY);
  EXPECT_EQ(out[5], INFINITY);
  EXPECT_EQ(out[6], 1.0f);
  EXPECT_TRUE(std::isnan(out[7]));
}

TEST(FastMathTest, ErfAbsoluteError) {
  const std::vector<float> in = Grid(-6.0f, 6.0f, 2000000);
  const std::vector<float> out = Apply(FastErf, in);
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    worst = std::max(worst, std::fabs(out[i] - std::erf(double{in[i]})));
  }
  EXPECT_LT(worst, 4.5e-7);
}

TEST(FastMathTest, ErfSpecialValues) {
  const std::vector<float> in = {0.0f,     1e-30f,    1e6f, -1e6f,
                                 INFINITY, -INFINITY, NAN};
  const std::vector<float> out = Apply(FastErf, in);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 1.1283792e-30f, 1e-36f);  // 2 / sqrt(pi) * x
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], -1.0f);
  EXPECT_EQ(out[4], 1.0f);
  EXPECT_EQ(out[5], -1.0f);
  EXPECT_TRUE(std::isnan(out[6]));
}

}  // namespace
}  // namespace coalesce::kernels
