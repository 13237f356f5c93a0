// CUDA elementwise kernels on float tensors: activations and broadcasting
// binary arithmetic. Each launcher enqueues one kernel on `stream` and
// returns the launch's error (cudaSuccess when enqueued). The math is in
// elementwise_math.h. `y` may alias an input of the same shape.
#ifndef COALESCE_KERNELS_CUDA_ELEMENTWISE_H_
#define COALESCE_KERNELS_CUDA_ELEMENTWISE_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/elementwise_math.h"

namespace coalesce::kernels::cuda {

// y[i] = act(x[i]) for i < n (alpha, beta: ApplyActivation's parameters).
cudaError_t LaunchActivation(Activation act, float alpha, float beta,
                             const float* x, float* y, int64_t n,
                             cudaStream_t stream);

// y[i] = a[i'] op b[i''] over the broadcast `ix` describes; n is the output's
// element count (MakeBroadcastIndexer's result).
cudaError_t LaunchBinary(BinaryOp op, const BroadcastIndexer& ix,
                         const float* a, const float* b, float* y, int64_t n,
                         cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_ELEMENTWISE_H_
