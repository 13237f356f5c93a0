// Shared by the .cu files of kernels/cuda/: the grid of a grid-stride loop,
// one block's tree reduction, and the dispatch from a FloatStorage to the
// element type of a templated kernel. CUDA only (not a math header).
#ifndef COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_
#define COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

inline constexpr int kLoopThreads = 256;

// Blocks of kLoopThreads for a grid-stride loop over n elements (capped:
// the loop covers the rest).
inline int LoopBlocks(int64_t n) {
  const int64_t blocks = (n + kLoopThreads - 1) / kLoopThreads;
  return static_cast<int>(blocks < 65535 * 32 ? blocks : 65535 * 32);
}

// Combines every thread's `part` of one block of kThreads (a power of two)
// with `combine`, pairwise as a tree; every thread gets the result.
template <int kThreads, typename T, typename Combine>
__device__ T BlockReduce(T part, Combine combine) {
  __shared__ T parts[kThreads];
  parts[threadIdx.x] = part;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      parts[threadIdx.x] =
          combine(parts[threadIdx.x], parts[threadIdx.x + width]);
    }
    __syncthreads();
  }
  return parts[0];
}

// fn(T{}) with T the element type `storage` stands for (float_storage.h):
// float, or uint16_t for float16 bits. Nest calls for several operands.
template <typename Fn>
cudaError_t WithFloatType(FloatStorage storage, Fn fn) {
  if (storage == FloatStorage::kHalf) return fn(uint16_t{});
  return fn(float{});
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_
