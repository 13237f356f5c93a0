// CUDA LayerNormalization over the last axis of a [rows, cols] float
// tensor: y = (x - mean) / sqrt(var + epsilon) * scale + bias, with scale
// and bias of cols elements (bias may be null). One block per row; the math
// is in layer_norm_math.h. Enqueues one kernel and returns the launch's
// error.
#ifndef COALESCE_KERNELS_CUDA_LAYER_NORM_H_
#define COALESCE_KERNELS_CUDA_LAYER_NORM_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

namespace coalesce::kernels::cuda {

cudaError_t LaunchLayerNorm(const float* x, const float* scale,
                            const float* bias, float* y, int64_t rows,
                            int64_t cols, float epsilon, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAYER_NORM_H_
