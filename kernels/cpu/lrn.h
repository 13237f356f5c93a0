// Local response normalization (ONNX LRN) across the channels of a float
// tensor laid out [batch, channels, inner] (NCHW with inner = H * W).
// Stateless and thread-safe; parallel over (batch, channel) planes.
#ifndef COALESCE_KERNELS_CPU_LRN_H_
#define COALESCE_KERNELS_CPU_LRN_H_

#include <cstdint>

namespace coalesce::kernels {

struct LrnParams {
  int64_t size = 1;  // channels in the window, >= 1
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
};

// y[n, c, i] = x[n, c, i] / (bias + alpha / size * square_sum)^beta, where
// square_sum adds x[n, c', i]^2 over the channels c' in
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] that exist.
// REQUIRES: `y` overlaps not `x`.
void Lrn(const float* x, int64_t batch, int64_t channels, int64_t inner,
         const LrnParams& params, float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_LRN_H_
