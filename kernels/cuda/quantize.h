// CUDA QuantizeLinear and DequantizeLinear (quantize_math.h): per tensor
// (channels = 1) or per channel of [outer, channels, inner]. int32 is for
// dequantizing only. Enqueues one kernel on `stream` and returns the
// launch's error.
#ifndef COALESCE_KERNELS_CUDA_QUANTIZE_H_
#define COALESCE_KERNELS_CUDA_QUANTIZE_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/quantize_math.h"

namespace coalesce::kernels::cuda {

cudaError_t LaunchQuantize(bool quantize, QuantType type, const void* x,
                           const float* scale, const void* zero_point, void* y,
                           int64_t outer, int64_t channels, int64_t inner,
                           cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_QUANTIZE_H_
