#include "kernels/cpu/group_norm.h"

#include <cmath>

namespace coalesce::kernels {

void GroupNorm(const float* in, const GroupNormParams& p, float* out) {
  const int64_t per_group = p.c / p.groups;
  const int64_t group_size = per_group * p.spatial;
#pragma omp parallel for if (p.n * p.c * p.spatial >= (1 << 15))
  for (int64_t ng = 0; ng < p.n * p.groups; ++ng) {
    const float* x = in + ng * group_size;
    float* y = out + ng * group_size;
    double sum = 0.0, squares = 0.0;
    for (int64_t i = 0; i < group_size; ++i) sum += x[i];
    const double mean = group_size > 0 ? sum / group_size : 0.0;
    for (int64_t i = 0; i < group_size; ++i) {
      const double d = x[i] - mean;
      squares += d * d;
    }
    const double var = group_size > 0 ? squares / group_size : 0.0;
    const double inv = 1.0 / std::sqrt(var + p.epsilon);
    const int64_t g = ng % p.groups;
    for (int64_t k = 0; k < per_group; ++k) {
      const int64_t channel = g * per_group + k;
      const int64_t at = p.affine_per_group ? g : channel;
      const double scale = p.scale[at] * inv;
      const double shift = p.bias[at] - mean * scale;
      const float* xc = x + k * p.spatial;
      float* yc = y + k * p.spatial;
      for (int64_t s = 0; s < p.spatial; ++s) {
        yc[s] = static_cast<float>(xc[s] * scale + shift);
      }
    }
  }
}

}  // namespace coalesce::kernels
