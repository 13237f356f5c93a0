// CUDA Resize of float tensors (resize_math.h): nearest or N-linear.
// Enqueues one kernel on `stream` and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_RESIZE_H_
#define COALESCE_KERNELS_CUDA_RESIZE_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/resize_math.h"

namespace coalesce::kernels::cuda {

// y has n elements (the product of ix.out).
cudaError_t LaunchResize(const ResizeIndexer& ix, const float* x, float* y,
                         int64_t n, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_RESIZE_H_
