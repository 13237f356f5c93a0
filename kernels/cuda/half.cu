#include "kernels/cuda/half.h"
#include "kernels/cuda/launch_util.cuh"

// The kernels call half_math.h rather than the hardware conversions
// (__float2half_rn, __half2float): those agree on every number but turn
// every NaN into the canonical 0x7fff (float: 0x7fffffff), dropping its
// sign, while the host converts constants with half_math.h. The integer
// steps cost little next to the memory traffic of a conversion.

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

int Blocks(int64_t n) { return LoopBlocks(n); }

__global__ void ToHalfKernel(const float* __restrict__ x,
                             uint16_t* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FloatToHalfBits(x[i]);
  }
}

__global__ void FromHalfKernel(const uint16_t* __restrict__ x,
                               float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = HalfBitsToFloat(x[i]);
  }
}

}  // namespace

cudaError_t LaunchToHalf(const float* x, uint16_t* y, int64_t count,
                         cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  ToHalfKernel<<<Blocks(count), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

cudaError_t LaunchFromHalf(const uint16_t* x, float* y, int64_t count,
                           cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  FromHalfKernel<<<Blocks(count), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
