// CUDA elementwise kernels computed in float32: activations and
// broadcasting binary arithmetic. Each operand is float32 or 16-bit
// (float_storage.h), independently of the others: loaded as float32, the
// result stored rounding to nearest even. Each launcher enqueues one kernel
// on `stream` (none for an empty output) and returns the launch's error
// (cudaSuccess when enqueued). The math is in elementwise_math.h. `y` may
// alias an input of the same shape and storage, never another part of it.
#ifndef COALESCE_KERNELS_CUDA_ELEMENTWISE_H_
#define COALESCE_KERNELS_CUDA_ELEMENTWISE_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

// An activation and ApplyActivation's parameters.
struct ActivationFn {
  Activation act = Activation::kIdentity;
  float alpha = 0.0f, beta = 0.0f;
};

// y[i] = f(x[i]) for i < n.
// REQUIRES: n >= 0; x and y hold n elements of their storage.
cudaError_t LaunchActivation(const ActivationFn& f, FloatSource x,
                             FloatTarget y, int64_t n, cudaStream_t stream);

// y[i] = a[i'] op b[i''] over the broadcast `ix` describes; n is the output's
// element count (MakeBroadcastIndexer's result).
cudaError_t LaunchBinary(BinaryOp op, const BroadcastIndexer& ix, FloatSource a,
                         FloatSource b, FloatTarget y, int64_t n,
                         cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_ELEMENTWISE_H_
