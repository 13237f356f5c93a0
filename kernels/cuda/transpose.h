// CUDA Transpose: y = x with its axes permuted, for elements of 1, 2, 4 or 8
// bytes (rank <= 8). The index math is in transpose_math.h. Enqueues one
// kernel on `stream` and returns the launch's error. Any indexer works: one
// with zero strides on some axes broadcasts x along them (Expand,
// engine/device/kernel_args.h's ExpandIndexerFor).
#ifndef COALESCE_KERNELS_CUDA_TRANSPOSE_H_
#define COALESCE_KERNELS_CUDA_TRANSPOSE_H_

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/transpose_math.h"

namespace coalesce::kernels::cuda {

// `count` is MakeTransposeIndexer's result. cudaErrorInvalidValue for an
// unsupported element size.
cudaError_t LaunchTranspose(const TransposeIndexer& ix, const void* x, void* y,
                            int64_t count, size_t element_bytes,
                            cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_TRANSPOSE_H_
