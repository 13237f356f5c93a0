// CUDA Softmax over the last axis of a [rows, cols] tensor (ONNX Softmax,
// opset 13+, axis = -1, after the caller flattens the leading axes). x and
// y are float32 or 16-bit each (float_storage.h): the row's max and sum
// are float32 whatever their storage, y rounded once to nearest even. One
// block per row; the math is in softmax_math.h. y may be x (same storage),
// never another part of it. Enqueues one kernel on `stream` and returns the
// launch's error.
#ifndef COALESCE_KERNELS_CUDA_SOFTMAX_H_
#define COALESCE_KERNELS_CUDA_SOFTMAX_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

cudaError_t LaunchSoftmax(FloatSource x, FloatTarget y, int64_t rows,
                          int64_t cols, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_SOFTMAX_H_
