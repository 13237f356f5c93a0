#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/transpose.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

// One thread per output element: consecutive threads write consecutive
// output elements (coalesced stores); the reads gather.
template <typename T>
__global__ void TransposeKernel(TransposeIndexer ix, const T* __restrict__ x,
                                T* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[TransposeSourceOffset(ix, i)];
  }
}

template <typename T>
cudaError_t Launch(const TransposeIndexer& ix, const void* x, void* y,
                   int64_t n, cudaStream_t stream) {
  TransposeKernel<T><<<LoopBlocks(n), kThreads, 0, stream>>>(
      ix, static_cast<const T*>(x), static_cast<T*>(y), n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchTranspose(const TransposeIndexer& ix, const void* x, void* y,
                            int64_t count, size_t element_bytes,
                            cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      return Launch<uint8_t>(ix, x, y, count, stream);
    case 2:
      return Launch<uint16_t>(ix, x, y, count, stream);
    case 4:
      return Launch<uint32_t>(ix, x, y, count, stream);
    case 8:
      return Launch<uint64_t>(ix, x, y, count, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace coalesce::kernels::cuda
