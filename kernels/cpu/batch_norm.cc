#include "kernels/cpu/batch_norm.h"

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
    for (int64_t i = 0; i < inner; ++i) dst[i] = src[i] * a + b;
  }
}

}  // namespace coalesce::kernels
