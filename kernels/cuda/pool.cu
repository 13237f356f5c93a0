#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/pool.h"

namespace coalesce::kernels::cuda {
namespace {

template <typename X, typename Y>
__global__ void Pool2DKernel(Pool2DGeometry g, PoolLayout layout,
                             const X* __restrict__ x, Y* __restrict__ y,
                             int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const PoolSite s = PoolSiteOf(g, layout, i);
    y[i] = FromFloat<Y>(
        PoolValue(g, x + s.plane_offset, s.p, s.q, s.pixel_stride));
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

// x and y may be the same array (no __restrict__): element i is read
// before it is written, by the thread that writes it.
template <typename X, typename Z, typename Y>
__global__ void ChannelAffineKernel(ChannelAffineMap m, const X* x, const Z* z,
                                    Y* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromFloat<Y>(ChannelAffineValue(m, x, z, i));
  }
}

}  // namespace

cudaError_t LaunchPool2D(const Pool2DGeometry& g, const PoolLayout& layout,
                         FloatSource x, FloatTarget y, cudaStream_t stream) {
  const int64_t n = layout.planes * g.out_h * g.out_w;
  if (n == 0) return cudaSuccess;
  return WithFloatType(x.storage, [&](auto x_tag) {
    return WithFloatType(y.storage, [&](auto y_tag) {
      using X = decltype(x_tag);
      using Y = decltype(y_tag);
      Pool2DKernel<X, Y><<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
          g, layout, static_cast<const X*>(x.data), static_cast<Y*>(y.data), n);
      return cudaGetLastError();
    });
  });
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

cudaError_t LaunchChannelAffine(const ChannelAffineMap& m, FloatSource x,
                                FloatSource z, FloatTarget y,
                                cudaStream_t stream) {
  const int64_t n = ElementCount(m.layout);
  if (n == 0) return cudaSuccess;
  return WithFloatType(x.storage, [&](auto x_tag) {
    return WithFloatType(z.storage, [&](auto z_tag) {
      return WithFloatType(y.storage, [&](auto y_tag) {
        using X = decltype(x_tag);
        using Z = decltype(z_tag);
        using Y = decltype(y_tag);
        ChannelAffineKernel<X, Z, Y>
            <<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
                m, static_cast<const X*>(x.data), static_cast<const Z*>(z.data),
                static_cast<Y*>(y.data), n);
        return cudaGetLastError();
      });
    });
  });
}

}  // namespace coalesce::kernels::cuda
