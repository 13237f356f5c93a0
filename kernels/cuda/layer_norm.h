// CUDA LayerNormalization over the last axis of a [rows, cols] tensor:
// y = (x - mean) / sqrt(var + epsilon) * scale + bias, with scale and bias
// float32 of cols elements (bias may be null). x and y are float32 or
// float16 each (float_storage.h): the statistics and the affine map are
// float32 whatever their storage, y rounded once to nearest even. One block
// per row; the math is in layer_norm_math.h. y may be x (same storage),
// never another part of it. Enqueues one kernel and returns the launch's
// error.
#ifndef COALESCE_KERNELS_CUDA_LAYER_NORM_H_
#define COALESCE_KERNELS_CUDA_LAYER_NORM_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

cudaError_t LaunchLayerNorm(FloatSource x, const float* scale,
                            const float* bias, FloatTarget y, int64_t rows,
                            int64_t cols, float epsilon, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAYER_NORM_H_
