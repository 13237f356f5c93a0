#include "kernels/cpu/layer_norm.h"

#include <cmath>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

void NormalizeRow(const float* in, int64_t cols, const LayerNormParams& p,
                  float* out) {
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) sum += in[c];
  const double mean = sum / static_cast<double>(cols);
  double squares = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double d = in[c] - mean;
    squares += d * d;
  }
  const double variance = squares / static_cast<double>(cols);
  const float inv_std =
      static_cast<float>(1.0 / std::sqrt(variance + p.epsilon));
  const float m = static_cast<float>(mean);
  const int64_t ss = p.scale_is_scalar ? 0 : 1;
  const int64_t bs = p.bias_is_scalar ? 0 : 1;
  for (int64_t c = 0; c < cols; ++c) {
    const float y = (in[c] - m) * inv_std * p.scale[c * ss];
    out[c] = p.bias != nullptr ? y + p.bias[c * bs] : y;
  }
}

}  // namespace

void LayerNorm(const float* in, int64_t rows, int64_t cols,
               const LayerNormParams& params, float* out) {
  if (cols == 0) return;
#pragma omp parallel for if (rows * cols >= kParallelElements && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    NormalizeRow(in + r * cols, cols, params, out + r * cols);
  }
}

}  // namespace coalesce::kernels
