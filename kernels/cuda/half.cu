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

// y[i] = x[i] as Y (float_storage.h's conversions).
template <typename X, typename Y>
__global__ void ConvertKernel(const X* __restrict__ x, Y* __restrict__ y,
                              int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromFloat<Y>(ToFloat(x[i]));
  }
}

template <typename X, typename Y>
cudaError_t Convert(const void* x, void* y, int64_t count,
                    cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  ConvertKernel<X, Y><<<Blocks(count), kThreads, 0, stream>>>(
      static_cast<const X*>(x), static_cast<Y*>(y), count);
  return cudaGetLastError();
}

// y[i] = x[i] clamped to +-max, as Y.
template <typename Y>
__global__ void SaturatingKernel(const float* __restrict__ x, Y* __restrict__ y,
                                 float max, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromFloat<Y>(ClampToFinite(x[i], max));
  }
}

template <typename Y>
cudaError_t Saturate(const float* x, void* y, float max, int64_t count,
                     cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  SaturatingKernel<Y><<<Blocks(count), kThreads, 0, stream>>>(
      x, static_cast<Y*>(y), max, count);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchToHalf(const float* x, uint16_t* y, int64_t count,
                         FloatStorage format, cudaStream_t stream) {
  if (format == FloatStorage::kBFloat16)
    return Convert<float, BFloat16Bits>(x, y, count, stream);
  if (format != FloatStorage::kHalf) return cudaErrorInvalidValue;
  return Convert<float, uint16_t>(x, y, count, stream);
}

cudaError_t LaunchToHalfSaturating(const float* x, uint16_t* y, int64_t count,
                                   FloatStorage format, cudaStream_t stream) {
  if (format == FloatStorage::kBFloat16)
    return Saturate<BFloat16Bits>(x, y, kMaxFiniteBFloat16, count, stream);
  if (format != FloatStorage::kHalf) return cudaErrorInvalidValue;
  return Saturate<uint16_t>(x, y, kMaxFiniteHalf, count, stream);
}

cudaError_t LaunchFromHalf(const uint16_t* x, float* y, int64_t count,
                           FloatStorage format, cudaStream_t stream) {
  if (format == FloatStorage::kBFloat16)
    return Convert<BFloat16Bits, float>(x, y, count, stream);
  if (format != FloatStorage::kHalf) return cudaErrorInvalidValue;
  return Convert<uint16_t, float>(x, y, count, stream);
}

}  // namespace coalesce::kernels::cuda
