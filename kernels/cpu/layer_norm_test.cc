#include "kernels/cpu/layer_norm.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

TEST(LayerNormTest, RowsWithScaleAndBias) {
  const int64_t rows = 3, cols = 7;
  std::vector<float> in(rows * cols), scale(cols), bias(cols);
  for (int64_t i = 0; i < rows * cols; ++i) in[i] = std::cos(i * 1.3f) * 4 + i;
  for (int64_t c = 0; c < cols; ++c) {
    scale[c] = 0.5f + c * 0.1f;
    bias[c] = -0.2f * c;
  }
  for (bool with_bias : {false, true}) {
    std::vector<float> out(in.size());
    LayerNormParams p;
    p.scale = scale.data();
    p.bias = with_bias ? bias.data() : nullptr;
    p.epsilon = 1e-3f;
    LayerNorm(in.data(), rows, cols, p, out.data());
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) mean += in[r * cols + c];
      mean /= cols;
      for (int64_t c = 0; c < cols; ++c)
        var += std::pow(in[r * cols + c] - mean, 2);
      var /= cols;
      for (int64_t c = 0; c < cols; ++c) {
        const double want =
            (in[r * cols + c] - mean) / std::sqrt(var + 1e-3) * scale[c] +
            (with_bias ? bias[c] : 0.0);
        ASSERT_NEAR(out[r * cols + c], want, 1e-5);
      }
    }
  }
}

TEST(LayerNormTest, ScalarScaleAndBiasInPlace) {
  std::vector<float> data = {1, 2, 3, 4};
  const float scale = 2.0f, bias = 1.0f;
  LayerNormParams p{&scale, &bias, true, true, 0.0f};
  LayerNorm(data.data(), 1, 4, p, data.data());
  const double inv_std = 1 / std::sqrt(1.25);
  for (int c = 0; c < 4; ++c)
    EXPECT_NEAR(data[c], (c + 1 - 2.5) * inv_std * 2 + 1, 1e-5);
}

}  // namespace
}  // namespace coalesce::kernels
