#include "kernels/cpu/batch_norm.h"

#include <algorithm>
#include <cmath>

namespace coalesce::kernels {

void BatchNormInference(const BatchNormParams& p, const float* x, int64_t batch,
                        int64_t channels, int64_t inner, float* y) {
  const int64_t planes = batch * channels;
#pragma omp parallel for if (planes * inner > (1 << 15))
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t c = plane % channels;
    const float a = p.scale[c] / std::sqrt(p.var[c] + p.epsilon);
    const float b = p.bias[c] - p.mean[c] * a;
    const float* src = x + plane * inner;
    float* dst = y + plane * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i)
      dst[i] = std::min(std::max(src[i] * a + b, p.lower), p.upper);
  }
}

void BatchNormInferenceChannelsLast(const BatchNormParams& p, const float* x,
                                    int64_t positions, int64_t channels,
                                    float* y) {
  // Tasks of kRows positions by kBlock channels; each computes its block's
  // factors (kBlock square roots per kRows positions) on its own stack.
  constexpr int64_t kBlock = 256, kRows = 64;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  const int64_t chunks = (positions + kRows - 1) / kRows;
#pragma omp parallel for if (positions * channels > (1 << 15))
  for (int64_t task = 0; task < chunks * blocks; ++task) {
    const int64_t first_c = task % blocks * kBlock;
    const int64_t n = std::min(kBlock, channels - first_c);
    float a[kBlock], b[kBlock];
    for (int64_t c = 0; c < n; ++c) {
      const int64_t k = first_c + c;
      a[c] = p.scale[k] / std::sqrt(p.var[k] + p.epsilon);
      b[c] = p.bias[k] - p.mean[k] * a[c];
    }
    const int64_t first_row = task / blocks * kRows;
    const int64_t rows = std::min(kRows, positions - first_row);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = x + (first_row + r) * channels + first_c;
      float* dst = y + (first_row + r) * channels + first_c;
#pragma omp simd
      for (int64_t c = 0; c < n; ++c)
        dst[c] = std::min(std::max(src[c] * a[c] + b[c], p.lower), p.upper);
    }
  }
}

}  // namespace coalesce::kernels
