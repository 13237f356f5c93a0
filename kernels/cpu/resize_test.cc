#include "kernels/cpu/resize.h"

#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

std::vector<float> Resize1d(const std::vector<float>& x, int64_t out,
                            double scale, const ResizeOptions& options,
                            double roi_start = 0, double roi_end = 1) {
  std::vector<float> y(out);
  Resize(x.data(),
         {ResizeAxis{static_cast<int64_t>(x.size()), out, scale, roi_start,
                     roi_end}},
         options, y.data());
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(ResizeTest, LinearHalfPixelUpsample) {
  ResizeOptions o{.mode = ResizeMode::kLinear};
  // x = (y + 0.5) / 2 - 0.5: -0.25, 0.25, 0.75, 1.25 (edges clamp).
  ExpectNear(Resize1d({1, 2}, 4, 2.0, o), {1, 1.25f, 1.75f, 2});
}

TEST(ResizeTest, LinearAlignCornersUsesFractionalLength) {
  ResizeOptions o{.mode = ResizeMode::kLinear,
                  .coordinate = ResizeCoordinate::kAlignCorners};
  // length = 0.6 * 4 = 2.4: x = y * 3 / 1.4.
  ExpectNear(Resize1d({1, 2, 3, 4}, 2, 0.6, o), {1, 1 + 3 / 1.4f});
}

TEST(ResizeTest, NearestRoundingRules) {
  const std::vector<float> x = {10, 20, 30, 40};
  ResizeOptions o{.coordinate = ResizeCoordinate::kAsymmetric};
  // x = y / 1.6: 0, 0.625, 1.25, 1.875, 2.5, 3.125
  o.nearest = NearestRounding::kRoundPreferFloor;
  ExpectNear(Resize1d(x, 6, 1.6, o), {10, 20, 20, 30, 30, 40});
  o.nearest = NearestRounding::kRoundPreferCeil;
  ExpectNear(Resize1d(x, 6, 1.6, o), {10, 20, 20, 30, 40, 40});
  o.nearest = NearestRounding::kFloor;
  ExpectNear(Resize1d(x, 6, 1.6, o), {10, 10, 20, 20, 30, 40});
  o.nearest = NearestRounding::kCeil;
  ExpectNear(Resize1d(x, 6, 1.6, o), {10, 20, 30, 30, 40, 40});
}

TEST(ResizeTest, CubicAtIntegralCoordinatesCopies) {
  ResizeOptions o{.mode = ResizeMode::kCubic,
                  .coordinate = ResizeCoordinate::kAsymmetric};
  // x = y / 2: even outputs fall on inputs.
  const std::vector<float> y = Resize1d({1, 5, 2, 7}, 8, 2.0, o);
  EXPECT_NEAR(y[0], 1, 1e-6);
  EXPECT_NEAR(y[2], 5, 1e-6);
  EXPECT_NEAR(y[4], 2, 1e-6);
  EXPECT_NEAR(y[6], 7, 1e-6);
}

TEST(ResizeTest, CubicOfALineIsTheLine) {
  // Keys' kernel with a = -0.5 reproduces linear functions away from the
  // edges.
  ResizeOptions o{.mode = ResizeMode::kCubic,
                  .coordinate = ResizeCoordinate::kAsymmetric,
                  .cubic_coeff_a = -0.5};
  const std::vector<float> y = Resize1d({0, 1, 2, 3, 4, 5, 6, 7}, 32, 4.0, o);
  for (int i = 4; i < 24; ++i) EXPECT_NEAR(y[i], i / 4.0f, 1e-5) << i;
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  ResizeOptions o{.mode = ResizeMode::kLinear,
                  .coordinate = ResizeCoordinate::kTfCropAndResize,
                  .extrapolation_value = -1};
  // roi [0.5, 1.5] of 3 elements: x = 1 + y * 2 / 2 -> 1, 2, 3 (outside).
  ExpectNear(Resize1d({0, 10, 20}, 3, 1.0, o, 0.5, 1.5), {10, 20, -1});
}

TEST(ResizeTest, AntialiasAveragesAllInputsWhenHalving) {
  ResizeOptions o{.mode = ResizeMode::kLinear, .antialias = true};
  // scale 0.5: x = 2y + 0.5, a triangle of half-width 2 over the inputs.
  const std::vector<float> y = Resize1d({0, 4, 8, 12}, 2, 0.5, o);
  // Taps 0..3 around 0.5 with weights (1-|i-0.5|/2): .75 .75 .25 .25 edge
  // clamped at -1 -> .25 on x[0].
  EXPECT_NEAR(y[0], (0.25f * 0 + 0.75f * 0 + 0.75f * 4 + 0.25f * 8) / 2.0f,
              1e-5);
}

TEST(ResizeTest, TwoDimensionalBilinear) {
  const std::vector<float> x = {1, 2, 3, 4};  // 2x2
  std::vector<float> y(16);
  ResizeOptions o{.mode = ResizeMode::kLinear,
                  .coordinate = ResizeCoordinate::kAlignCorners};
  Resize(x.data(), {ResizeAxis{2, 4, 2.0}, ResizeAxis{2, 4, 2.0}}, o, y.data());
  // align_corners: x = y / 3 on both axes.
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(y[r * 4 + c], 1 + 2 * r / 3.0f + c / 3.0f, 1e-6);
}

}  // namespace
}  // namespace coalesce::kernels
