// CUDA typed elementwise kernels: arithmetic, comparisons and logic on
// float32, int64, int32 and bool tensors, Where, and Cast (the math and its
// semantics are in typed_math.h). Each launcher enqueues one kernel on
// `stream` and returns the launch's error (cudaSuccess when enqueued).
#ifndef COALESCE_KERNELS_CUDA_TYPED_H_
#define COALESCE_KERNELS_CUDA_TYPED_H_

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/typed_math.h"

namespace coalesce::kernels::cuda {

// y[i] = op(a[i'], b[i'']) for the n output elements `ix` maps (a unary op
// reads a only; TypedElement).
cudaError_t LaunchTyped(TypedOp op, ElementType type, const TypedIndexer& ix,
                        const void* a, const void* b, void* y, int64_t n,
                        cudaStream_t stream);

// y[i] = cond[i'] ? x[i''] : z[i'''] for elements of `element_bytes` (1, 2,
// 4 or 8); cudaErrorInvalidValue for another size.
cudaError_t LaunchWhere(const TypedIndexer& ix, const uint8_t* cond,
                        const void* x, const void* z, size_t element_bytes,
                        void* y, int64_t n, cudaStream_t stream);

// y[i] = x[i] converted from `from` to `to` (CastElement), i < n.
cudaError_t LaunchCast(ElementType from, const void* x, ElementType to, void* y,
                       int64_t n, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_TYPED_H_
