#include "kernels/cuda/gather.h"
#include "kernels/cuda/launch_util.cuh"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

int Blocks(int64_t n) { return LoopBlocks(n); }

template <typename T>
__global__ void GatherKernel(const T* __restrict__ data, int64_t axis_dim,
                             int64_t inner, const void* indices,
                             bool indices_int64, int64_t num_indices,
                             T* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t pos = GatherIndexPosition(i, num_indices, inner);
    const int64_t index = indices_int64
                              ? static_cast<const int64_t*>(indices)[pos]
                              : static_cast<const int32_t*>(indices)[pos];
    const int64_t src =
        GatherSourceOffset(i, index, axis_dim, num_indices, inner);
    y[i] = src < 0 ? T{0} : data[src];
  }
}

__global__ void CastKernel(const void* x, CastSource type, float* y,
                           int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = ReadAsFloat(x, i, type);
  }
}

}  // namespace

cudaError_t LaunchGather(const void* data, size_t element_bytes, int64_t outer,
                         int64_t axis_dim, int64_t inner, const void* indices,
                         bool indices_int64, int64_t num_indices, void* y,
                         cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (n == 0) return cudaSuccess;
  if (element_bytes == 4) {
    GatherKernel<uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(data), axis_dim, inner, indices,
        indices_int64, num_indices, static_cast<uint32_t*>(y), n);
  } else if (element_bytes == 8) {
    GatherKernel<uint64_t><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const uint64_t*>(data), axis_dim, inner, indices,
        indices_int64, num_indices, static_cast<uint64_t*>(y), n);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchCastToFloat(const void* x, CastSource type, float* y,
                              int64_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  CastKernel<<<Blocks(count), kThreads, 0, stream>>>(x, type, y, count);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
