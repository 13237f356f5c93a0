// CUDA Gather (data viewed as [outer, axis_dim, inner], elements of 1, 2,
// 4 or 8 bytes; int64 or int32 indices; an out-of-range index gives zeros). The
// math is in gather_math.h. The launcher enqueues one kernel and returns the
// launch's error.
#ifndef COALESCE_KERNELS_CUDA_GATHER_H_
#define COALESCE_KERNELS_CUDA_GATHER_H_

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/gather_math.h"

namespace coalesce::kernels::cuda {

cudaError_t LaunchGather(const void* data, size_t element_bytes, int64_t outer,
                         int64_t axis_dim, int64_t inner, const void* indices,
                         bool indices_int64, int64_t num_indices, void* y,
                         cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_GATHER_H_
