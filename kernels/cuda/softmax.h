// CUDA Softmax over the last axis of a [rows, cols] float tensor (ONNX
// Softmax, opset 13+, axis = -1, after the caller flattens the leading
// axes). One block per row; the math is in softmax_math.h. Enqueues one
// kernel on `stream` and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_SOFTMAX_H_
#define COALESCE_KERNELS_CUDA_SOFTMAX_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

namespace coalesce::kernels::cuda {

cudaError_t LaunchSoftmax(const float* x, float* y, int64_t rows, int64_t cols,
                          cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_SOFTMAX_H_
