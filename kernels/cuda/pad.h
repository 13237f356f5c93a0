// CUDA Pad (pad_math.h): elements of 1, 2, 4 or 8 bytes; the constant is
// the low `element_bytes` bytes of `fill`. Enqueues one kernel on `stream`
// and returns the launch's error (cudaErrorInvalidValue for another element
// size).
#ifndef COALESCE_KERNELS_CUDA_PAD_H_
#define COALESCE_KERNELS_CUDA_PAD_H_

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/pad_math.h"

namespace coalesce::kernels::cuda {

// y has n elements (the product of ix.out_dims).
cudaError_t LaunchPad(const PadIndexer& ix, const void* x, uint64_t fill,
                      size_t element_bytes, void* y, int64_t n,
                      cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_PAD_H_
