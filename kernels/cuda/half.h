// CUDA 16-bit float conversion for the GPU path's FP16 and BF16 modes:
// float to IEEE 754 binary16 or bfloat16 bits and back, elementwise. The
// rounding (to nearest, ties to even; overflow to infinity; NaN kept,
// quiet, with its sign) is half_math.h's, which the kernels call, so device
// and host conversions give the same bits. Each launcher enqueues one kernel
// (none for an empty array) and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_HALF_H_
#define COALESCE_KERNELS_CUDA_HALF_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

// y[i] = x[i] in `format` (kHalf: FloatToHalfBits, kBFloat16:
// FloatToBFloat16Bits) for i < count; cudaErrorInvalidValue for kFloat.
// REQUIRES: count >= 0; x and y are device memory of count elements.
cudaError_t LaunchToHalf(const float* x, uint16_t* y, int64_t count,
                         FloatStorage format, cudaStream_t stream);

// LaunchToHalf with each value first clamped to the format's finite range
// (half_math.h, ClampToFinite): no finite x becomes an infinity.
cudaError_t LaunchToHalfSaturating(const float* x, uint16_t* y, int64_t count,
                                   FloatStorage format, cudaStream_t stream);

// y[i] = x[i] (in `format`) as float, exactly, for i < count.
// REQUIRES: count >= 0; x and y are device memory of count elements.
cudaError_t LaunchFromHalf(const uint16_t* x, float* y, int64_t count,
                           FloatStorage format, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_HALF_H_
