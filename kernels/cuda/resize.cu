#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/resize.h"

namespace coalesce::kernels::cuda {
namespace {

__global__ void ResizeKernel(ResizeIndexer ix, const float* __restrict__ x,
                             float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = ResizeElement(ix, x, i);
  }
}

}  // namespace

cudaError_t LaunchResize(const ResizeIndexer& ix, const float* x, float* y,
                         int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ResizeKernel<<<LoopBlocks(n), kLoopThreads, 0, stream>>>(ix, x, y, n);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
