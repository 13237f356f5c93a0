// Inference-mode batch normalization over channel planes:
//   y[n, c, i] = (x[n, c, i] - mean[c]) / sqrt(var[c] + epsilon) * scale[c]
//                + bias[c]
// for x laid out [batch, channels, inner], then clamped to [lower, upper].
// `y` may equal `x`. Threaded per
// kernels/cpu/threading.h. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_BATCH_NORM_H_
#define COALESCE_KERNELS_CPU_BATCH_NORM_H_

#include <cstdint>
#include <limits>

namespace coalesce::kernels {

struct BatchNormParams {
  const float* scale = nullptr;
  const float* bias = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  float epsilon = 1e-5f;
  // y is clamped to [lower, upper] as it is stored (a fused Relu or Clip).
  float lower = -std::numeric_limits<float>::infinity();
  float upper = std::numeric_limits<float>::infinity();
};

void BatchNormInference(const BatchNormParams& params, const float* x,
                        int64_t batch, int64_t channels, int64_t inner,
                        float* y);

// The same for channels-last x, laid out [positions, channels]: one pass,
// per-channel factors computed on the stack. Allocates nothing.
void BatchNormInferenceChannelsLast(const BatchNormParams& params,
                                    const float* x, int64_t positions,
                                    int64_t channels, float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_BATCH_NORM_H_
