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

// The global-pooling fast path (LaunchGlobalPool2D): each plane's
// [in_h, in_w] pixels pooled to one value, many threads per plane.

constexpr int kWarp = 32;
constexpr int kGlobalThreads = 256;  // a multiple of kWarp
constexpr int kGlobalWarps = kGlobalThreads / kWarp;
// NCHW planes of at most this many pixels get a warp each (kGlobalWarps
// per block), larger ones a block each.
constexpr int64_t kWarpPlaneMax = 1024;
// NHWC blocks are kWarp channels wide, and their rows stride over the
// pixels: kNhwcRows, or kNhwcRowsLarge for planes of kWarp *
// kNhwcRowsLarge pixels or more (large maps have few channels, so few
// blocks: each gets more loads in flight).
constexpr int kNhwcRows = 8;
constexpr int kNhwcRowsLarge = 32;  // at most kWarp (GlobalPoolNhwcKernel)

// The reduction of a global pooling, in float32 as PoolValue's: a max that
// a NaN wins (PoolValue's rule, for elements and partials alike), or a sum
// that Finish divides by the plane's pixel count.
struct GlobalPoolOp {
  bool max = true;

  __device__ float Start() const { return max ? -INFINITY : 0.0f; }

  // acc combined with v, an element or another partial.
  __device__ float Add(float acc, float v) const {
    if (max) return v > acc || v != v ? v : acc;  // NaN propagates
    return acc + v;
  }

  // The pooled value of a plane of `pixels` (> 0) from its reduction.
  __device__ float Finish(float acc, int64_t pixels) const {
    return max ? acc : acc / static_cast<float>(pixels);
  }
};

// The reduction of `part` over the calling warp, in lane 0 (every lane
// gets a result; with several NaNs, lanes may hold different ones).
// REQUIRES: all 32 lanes call it.
__device__ float WarpPoolReduce(const GlobalPoolOp& op, float part) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    part = op.Add(part, __shfl_xor_sync(0xffffffffu, part, offset));
  }
  return part;
}

// The reduction of `part` over a 1-D block of kGlobalThreads, valid in
// thread 0. REQUIRES: every thread calls it, once per kernel.
__device__ float BlockPoolReduce(const GlobalPoolOp& op, float part) {
  __shared__ float warp_parts[kGlobalWarps];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  part = WarpPoolReduce(op, part);
  if (lane == 0) warp_parts[warp] = part;
  __syncthreads();
  if (warp != 0) return part;
  return WarpPoolReduce(op,
                        lane < kGlobalWarps ? warp_parts[lane] : op.Start());
}

// The reduction of plane[i] for i in [first, pixels) step `step`, in
// float32. Unrolled so that several loads are in flight.
template <typename X>
__device__ float StridedPoolPart(const GlobalPoolOp& op, const X* plane,
                                 int64_t first, int64_t step, int64_t pixels) {
  float acc = op.Start();
#pragma unroll 4
  for (int64_t i = first; i < pixels; i += step) {
    acc = op.Add(acc, ToFloat(plane[i]));
  }
  return acc;
}

// NCHW, small planes: warp w of block b pools plane b * kGlobalWarps + w
// (pixels contiguous) into y[plane].
template <typename X, typename Y>
__global__ void GlobalPoolWarpKernel(GlobalPoolOp op, const X* __restrict__ x,
                                     Y* __restrict__ y, int64_t planes,
                                     int64_t pixels) {
  const int64_t plane =
      int64_t{blockIdx.x} * kGlobalWarps + threadIdx.x / kWarp;
  if (plane >= planes) return;  // the whole warp: shuffles stay full
  const int lane = threadIdx.x % kWarp;
  const float part =
      StridedPoolPart(op, x + plane * pixels, lane, kWarp, pixels);
  const float acc = WarpPoolReduce(op, part);
  if (lane == 0) y[plane] = FromFloat<Y>(op.Finish(acc, pixels));
}

// NCHW, large planes: block b pools plane b (pixels contiguous) into y[b].
template <typename X, typename Y>
__global__ void GlobalPoolBlockKernel(GlobalPoolOp op, const X* __restrict__ x,
                                      Y* __restrict__ y, int64_t pixels) {
  const int64_t plane = blockIdx.x;
  const float part = StridedPoolPart(op, x + plane * pixels, threadIdx.x,
                                     kGlobalThreads, pixels);
  const float acc = BlockPoolReduce(op, part);
  if (threadIdx.x == 0) y[plane] = FromFloat<Y>(op.Finish(acc, pixels));
}

// NHWC: x [images, pixels, channels] -> y [images, channels]. Block
// (image, tile) pools channels [tile * kWarp, tile * kWarp + kWarp) of
// `image`: threadIdx.x is the channel in the tile (coalesced reads),
// threadIdx.y strides over the pixels; the blockDim.y partials of a
// channel are combined in row order. REQUIRES: blockDim.x == kWarp,
// blockDim.y <= kWarp.
template <typename X, typename Y>
__global__ void GlobalPoolNhwcKernel(GlobalPoolOp op, const X* __restrict__ x,
                                     Y* __restrict__ y, int64_t pixels,
                                     int64_t channels) {
  __shared__ float parts[kWarp][kWarp];  // [row][channel in tile]
  const int64_t image = blockIdx.x;
  const int64_t c = int64_t{blockIdx.y} * kWarp + threadIdx.x;
  float acc = op.Start();
  if (c < channels) {  // no early return: every thread reaches the barrier
    acc = StridedPoolPart(op, x + image * pixels * channels + c,
                          threadIdx.y * channels, blockDim.y * channels,
                          pixels * channels);
  }
  parts[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  for (unsigned row = 1; row < blockDim.y; ++row) {
    acc = op.Add(acc, parts[row][threadIdx.x]);
  }
  y[image * channels + c] = FromFloat<Y>(op.Finish(acc, pixels));
}

// Whether g pools each whole, non-empty plane to one value, unpadded and
// undilated (GlobalAveragePool, GlobalMaxPool): the fast path's case. The
// stride does not matter with one output; without pads, count_include_pad
// does not either.
bool IsGlobalPool(const Pool2DGeometry& g) {
  return g.out_h == 1 && g.out_w == 1 && g.in_h > 0 && g.in_w > 0 &&
         g.kernel_h == g.in_h && g.kernel_w == g.in_w && g.pad_top == 0 &&
         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 &&
         g.dilation_h == 1 && g.dilation_w == 1;
}

constexpr int64_t kMaxGridX = 2147483647, kMaxGridY = 65535;

// The grid of the NHWC kernel: x the images, y the channel tiles.
dim3 GlobalNhwcGrid(const PoolLayout& layout) {
  return dim3(static_cast<unsigned>(layout.planes / layout.channels),
              static_cast<unsigned>((layout.channels + kWarp - 1) / kWarp));
}

// Blocks of the NCHW kernel for `pixels` per plane: one per plane, or one
// per kGlobalWarps small planes.
int64_t GlobalNchwBlocks(const PoolLayout& layout, int64_t pixels) {
  if (pixels > kWarpPlaneMax) return layout.planes;
  return (layout.planes + kGlobalWarps - 1) / kGlobalWarps;
}

// Whether LaunchGlobalPool2D takes g over `layout`: IsGlobalPool(g), and a
// grid within CUDA's limits (else the general kernel runs).
bool TakesGlobalPath(const Pool2DGeometry& g, const PoolLayout& layout) {
  if (!IsGlobalPool(g)) return false;
  if (layout.channels_last) {
    return layout.planes / layout.channels <= kMaxGridX &&
           (layout.channels + kWarp - 1) / kWarp <= kMaxGridY;
  }
  return GlobalNchwBlocks(layout, g.in_h * g.in_w) <= kMaxGridX;
}

// Enqueues the global pooling of g over `layout` on X and Y elements.
// REQUIRES: TakesGlobalPath(g, layout).
template <typename X, typename Y>
cudaError_t LaunchGlobalPool2D(const Pool2DGeometry& g,
                               const PoolLayout& layout, const X* x, Y* y,
                               cudaStream_t stream) {
  const GlobalPoolOp op{g.max};
  const int64_t pixels = g.in_h * g.in_w;
  if (layout.channels_last) {
    const int rows =
        pixels >= int64_t{kWarp} * kNhwcRowsLarge ? kNhwcRowsLarge : kNhwcRows;
    GlobalPoolNhwcKernel<X, Y>
        <<<GlobalNhwcGrid(layout), dim3(kWarp, rows), 0, stream>>>(
            op, x, y, pixels, layout.channels);
    return cudaGetLastError();
  }
  const auto blocks = static_cast<unsigned>(GlobalNchwBlocks(layout, pixels));
  if (pixels <= kWarpPlaneMax) {
    GlobalPoolWarpKernel<X, Y><<<blocks, kGlobalThreads, 0, stream>>>(
        op, x, y, layout.planes, pixels);
  } else {
    GlobalPoolBlockKernel<X, Y>
        <<<blocks, kGlobalThreads, 0, stream>>>(op, x, y, pixels);
  }
  return cudaGetLastError();
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
  return WithFloatTypes(
      [&](auto x_tag, auto y_tag) {
        using X = decltype(x_tag);
        using Y = decltype(y_tag);
        const auto* x_data = static_cast<const X*>(x.data);
        auto* y_data = static_cast<Y*>(y.data);
        if (TakesGlobalPath(g, layout)) {
          return LaunchGlobalPool2D(g, layout, x_data, y_data, stream);
        }
        Pool2DKernel<X, Y><<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
            g, layout, x_data, y_data, n);
        return cudaGetLastError();
      },
      x.storage, y.storage);
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
  return WithFloatTypes(
      [&](auto x_tag, auto z_tag, auto y_tag) {
        using X = decltype(x_tag);
        using Z = decltype(z_tag);
        using Y = decltype(y_tag);
        ChannelAffineKernel<X, Z, Y>
            <<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
                m, static_cast<const X*>(x.data), static_cast<const Z*>(z.data),
                static_cast<Y*>(y.data), n);
        return cudaGetLastError();
      },
      x.storage, z.storage, y.storage);
}

}  // namespace coalesce::kernels::cuda
