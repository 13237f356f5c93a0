// Shared by the .cu files of kernels/cuda/: the grid of a grid-stride loop,
// one block's tree reduction, and the dispatch from FloatStorages to the
// element types of a templated kernel. CUDA only (not a math header).
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

namespace launch_detail {

template <typename H, typename Fn>
cudaError_t DispatchFloats(Fn fn) {
  return fn();
}

template <typename H, typename Fn, typename... Rest>
cudaError_t DispatchFloats(Fn fn, FloatStorage first, Rest... rest) {
  if (first == FloatStorage::kFloat) {
    return DispatchFloats<H>([&](auto... tags) { return fn(float{}, tags...); },
                             rest...);
  }
  return DispatchFloats<H>([&](auto... tags) { return fn(H{}, tags...); },
                           rest...);
}

}  // namespace launch_detail

// fn(T1{}, ..., Tn{}) with Ti the element type of storages[i], for a launch
// whose operands are float32 or one 16-bit format: a launch mixing float16
// and bfloat16 is cudaErrorInvalidValue. So a kernel of n floating operands
// is instantiated for float and each 16-bit type in 2 * 2^n ways, not 3^n.
template <typename Fn, typename... Storages>
cudaError_t WithFloatTypes(Fn fn, Storages... storages) {
  const bool half = ((storages == FloatStorage::kHalf) || ...);
  const bool bfloat16 = ((storages == FloatStorage::kBFloat16) || ...);
  if (half && bfloat16) return cudaErrorInvalidValue;
  if (bfloat16) {
    return launch_detail::DispatchFloats<BFloat16Bits>(fn, storages...);
  }
  return launch_detail::DispatchFloats<uint16_t>(fn, storages...);
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAUNCH_UTIL_CUH_
