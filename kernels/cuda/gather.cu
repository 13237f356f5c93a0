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

template <typename T>
cudaError_t Gather(const void* data, int64_t outer, int64_t axis_dim,
                   int64_t inner, const void* indices, bool indices_int64,
                   int64_t num_indices, void* y, cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  GatherKernel<T><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<const T*>(data), axis_dim, inner, indices, indices_int64,
      num_indices, static_cast<T*>(y), n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchGather(const void* data, size_t element_bytes, int64_t outer,
                         int64_t axis_dim, int64_t inner, const void* indices,
                         bool indices_int64, int64_t num_indices, void* y,
                         cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      return Gather<uint8_t>(data, outer, axis_dim, inner, indices,
                             indices_int64, num_indices, y, stream);
    case 2:
      return Gather<uint16_t>(data, outer, axis_dim, inner, indices,
                              indices_int64, num_indices, y, stream);
    case 4:
      return Gather<uint32_t>(data, outer, axis_dim, inner, indices,
                              indices_int64, num_indices, y, stream);
    case 8:
      return Gather<uint64_t>(data, outer, axis_dim, inner, indices,
                              indices_int64, num_indices, y, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace coalesce::kernels::cuda
