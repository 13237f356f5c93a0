// Layer normalization of a float tensor viewed as [rows, cols]: each row is
// normalized to zero mean and unit variance, then scaled and shifted.
// Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_LAYER_NORM_H_
#define COALESCE_KERNELS_CPU_LAYER_NORM_H_

#include <cstdint>

namespace coalesce::kernels {

// out[r, c] = (in[r, c] - mean_r) / sqrt(var_r + epsilon) * scale[c] + bias[c]
// with the population variance. `bias` may be null (no shift). `scale` and
// `bias` hold `cols` elements, or one element each when *_is_scalar.
// `out` may equal `in`.
struct LayerNormParams {
  const float* scale = nullptr;
  const float* bias = nullptr;
  bool scale_is_scalar = false;
  bool bias_is_scalar = false;
  float epsilon = 1e-5f;
};

void LayerNorm(const float* in, int64_t rows, int64_t cols,
               const LayerNormParams& params, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_LAYER_NORM_H_
