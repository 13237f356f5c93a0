// Shared by the .cu files of kernels/cuda/: the grid of a grid-stride loop,
// and one block's tree reduction. CUDA only (not a math header).
#ifndef COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_
#define COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_

#include <stdint.h>

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

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_
