// Inference-mode batch normalization over channel planes:
//   y[n, c, i] = (x[n, c, i] - mean[c]) / sqrt(var[c] + epsilon) * scale[c]
//                + bias[c]
// for x laid out [batch, channels, inner]. `y` may equal `x`. Threaded per
// kernels/cpu/threading.h. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_BATCH_NORM_H_
#define COALESCE_KERNELS_CPU_BATCH_NORM_H_

#include <cstdint>

namespace coalesce::kernels {

struct BatchNormParams {
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  float epsilon = 1e-5f;
};

void BatchNormInference(const BatchNormParams& params, const float* x,
                        int64_t batch, int64_t channels, int64_t inner,
                        float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_BATCH_NORM_H_
