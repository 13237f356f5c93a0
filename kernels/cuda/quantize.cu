#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/quantize.h"

namespace coalesce::kernels::cuda {
namespace {

template <typename Q>
__global__ void QuantizeKernel(bool quantize, const void* x, const float* scale,
                               const Q* zero_point, void* y, int64_t channels,
                               int64_t inner, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    QuantizeElement<Q>(quantize, x, scale, zero_point, y, channels, inner, i);
  }
}

template <typename Q>
cudaError_t Launch(bool quantize, const void* x, const float* scale,
                   const void* zero_point, void* y, int64_t channels,
                   int64_t inner, int64_t n, cudaStream_t stream) {
  QuantizeKernel<Q><<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
      quantize, x, scale, static_cast<const Q*>(zero_point), y, channels, inner,
      n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchQuantize(bool quantize, QuantType type, const void* x,
                           const float* scale, const void* zero_point, void* y,
                           int64_t outer, int64_t channels, int64_t inner,
                           cudaStream_t stream) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return cudaSuccess;
  switch (type) {
    case QuantType::kInt8:
      return Launch<int8_t>(quantize, x, scale, zero_point, y, channels, inner,
                            n, stream);
    case QuantType::kUint8:
      return Launch<uint8_t>(quantize, x, scale, zero_point, y, channels, inner,
                             n, stream);
    case QuantType::kInt16:
      return Launch<int16_t>(quantize, x, scale, zero_point, y, channels, inner,
                             n, stream);
    case QuantType::kUint16:
      return Launch<uint16_t>(quantize, x, scale, zero_point, y, channels,
                              inner, n, stream);
    case QuantType::kInt32:
      if (quantize) return cudaErrorInvalidValue;
      return Launch<int32_t>(false, x, scale, zero_point, y, channels, inner, n,
                             stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace coalesce::kernels::cuda
