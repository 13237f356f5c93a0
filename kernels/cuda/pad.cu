#include <string.h>

#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/pad.h"

namespace coalesce::kernels::cuda {
namespace {

template <typename T>
__global__ void PadKernel(PadIndexer ix, const T* x, T fill, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t src = PadSource(ix, i);
    y[i] = src < 0 ? fill : x[src];
  }
}

template <typename T>
cudaError_t Pad(const PadIndexer& ix, const void* x, uint64_t fill, void* y,
                int64_t n, cudaStream_t stream) {
  T value;
  memcpy(&value, &fill, sizeof(T));  // the low bytes (little-endian)
  PadKernel<T><<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
      ix, static_cast<const T*>(x), value, static_cast<T*>(y), n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchPad(const PadIndexer& ix, const void* x, uint64_t fill,
                      size_t element_bytes, void* y, int64_t n,
                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      return Pad<uint8_t>(ix, x, fill, y, n, stream);
    case 2:
      return Pad<uint16_t>(ix, x, fill, y, n, stream);
    case 4:
      return Pad<uint32_t>(ix, x, fill, y, n, stream);
    case 8:
      return Pad<uint64_t>(ix, x, fill, y, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace coalesce::kernels::cuda
