#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/pool.h"

namespace coalesce::kernels::cuda {
namespace {

__global__ void Pool2DKernel(Pool2DGeometry g, const float* __restrict__ x,
                             float* __restrict__ y, int64_t n) {
  const int64_t plane_out = g.out_h * g.out_w;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t plane = i / plane_out, r = i % plane_out;
    y[i] = PoolValue(g, x + plane * g.in_h * g.in_w, r / g.out_w, r % g.out_w);
  }
}

__global__ void LrnKernel(const float* __restrict__ x, float* __restrict__ y,
                          int64_t channels, int64_t spatial, int64_t size,
                          float alpha, float beta, float bias, int64_t n) {
  const int64_t image = channels * spatial;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / image, r = i % image;
    y[i] = LrnValue(x + b * image, channels, spatial, r / spatial, r % spatial,
                    size, alpha, beta, bias);
  }
}

__global__ void ChannelAffineKernel(const float* x, const float* scale,
                                    const float* shift, float* y,
                                    int64_t channels, int64_t spatial,
                                    Activation act, float alpha, float beta,
                                    int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = ChannelOf(i, channels, spatial);
    const float v = x[i] * (scale != nullptr ? scale[c] : 1.0f) +
                    (shift != nullptr ? shift[c] : 0.0f);
    y[i] = ApplyActivation(act, v, alpha, beta);
  }
}

}  // namespace

cudaError_t LaunchPool2D(const Pool2DGeometry& g, const float* x, float* y,
                         int64_t planes, cudaStream_t stream) {
  const int64_t n = planes * g.out_h * g.out_w;
  if (n == 0) return cudaSuccess;
  Pool2DKernel<<<LoopBlocks(n), kLoopThreads, 0, stream>>>(g, x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchLrn(const float* x, float* y, int64_t batch, int64_t channels,
                      int64_t spatial, int64_t size, float alpha, float beta,
                      float bias, cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return cudaSuccess;
  LrnKernel<<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
      x, y, channels, spatial, size, alpha, beta, bias, n);
  return cudaGetLastError();
}

cudaError_t LaunchChannelAffine(const float* x, const float* scale,
                                const float* shift, float* y, int64_t batch,
                                int64_t channels, int64_t spatial,
                                Activation act, float alpha, float beta,
                                cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n == 0) return cudaSuccess;
  ChannelAffineKernel<<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
      x, scale, shift, y, channels, spatial, act, alpha, beta, n);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
