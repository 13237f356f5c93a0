// CUDA indexing kernels: GatherND and GatherElements (elements of 1, 2, 4
// or 8 bytes; an index out of range gives a zero element), CumSum and
// ArgMax along the middle axis of [outer, n, inner] (float32, int64,
// int32). The math is in indexing_math.h. Each launcher enqueues one kernel
// on `stream` and returns the launch's error; cudaErrorInvalidValue for an
// element size or type it does not take.
#ifndef COALESCE_KERNELS_CUDA_INDEXING_H_
#define COALESCE_KERNELS_CUDA_INDEXING_H_

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/indexing_math.h"
#include "kernels/cuda/typed_math.h"

namespace coalesce::kernels::cuda {

// y has n elements (batches * rows_per_batch * slice).
cudaError_t LaunchGatherNd(const GatherNdIndexer& ix, const void* data,
                           size_t element_bytes, const int64_t* indices,
                           void* y, int64_t n, cudaStream_t stream);

// y has n elements (the indices' count); indices int64 or int32.
cudaError_t LaunchGatherElements(const GatherElementsIndexer& ix,
                                 const void* data, size_t element_bytes,
                                 const void* indices, bool indices_int64,
                                 void* y, int64_t n, cudaStream_t stream);

// One thread per line (outer * inner lines of n elements).
cudaError_t LaunchCumSum(ElementType type, const void* x, void* y,
                         int64_t outer, int64_t n, int64_t inner,
                         bool exclusive, bool reverse, cudaStream_t stream);

cudaError_t LaunchArgMax(ElementType type, const void* x, int64_t* y,
                         int64_t outer, int64_t n, int64_t inner,
                         bool select_last, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_INDEXING_H_
