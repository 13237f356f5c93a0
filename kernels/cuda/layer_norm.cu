#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/layer_norm_math.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it
constexpr int kCached = static_cast<int>(kLayerNormCachedCols / kThreads);

// One row's s = x (+ residual, rounded as the sum is stored).
template <typename X, typename R>
struct RowSource {
  const X* x;
  const R* residual;  // this row's residual row, or null
  FloatStorage sum_storage;
  // Row `row` of x, with its residual row (the residual repeats every
  // residual_rows rows).
  __device__ static RowSource Of(const X* x, const R* residual,
                                 int64_t residual_rows,
                                 FloatStorage sum_storage, int64_t row,
                                 int64_t cols) {
    return {
        x + row * cols,
        residual != nullptr ? residual + (row % residual_rows) * cols : nullptr,
        sum_storage};
  }
  __device__ float operator()(int64_t j) const {
    const float v = ToFloat(x[j]);
    if (residual == nullptr) return v;
    return RoundSum(v + ToFloat(residual[j]), sum_storage);
  }
};

// Where row `row` of the sum is written, or null without one.
__device__ void* RowSum(void* sum, FloatStorage storage, int64_t row,
                        int64_t cols) {
  if (sum == nullptr) return nullptr;
  return static_cast<char*>(sum) +
         row * cols * (storage == FloatStorage::kFloat ? 4 : 2);
}

__device__ void StoreSum(void* sum, FloatStorage storage, int64_t i, float v) {
  if (storage == FloatStorage::kHalf) {
    static_cast<uint16_t*>(sum)[i] = FloatToHalfBits(v);
  } else if (storage == FloatStorage::kBFloat16) {
    static_cast<uint16_t*>(sum)[i] = FloatToBFloat16Bits(v);
  } else {
    static_cast<float*>(sum)[i] = v;
  }
}

// X, R and Y: float, uint16_t for float16 bits, or BFloat16Bits
// (float_storage.h). Without
// a residual x and y may be the same array (no __restrict__ on them): each
// element is read before it is written, by the thread that writes it,
// after the whole row was read for the statistics.
template <typename X, typename R, typename Y>
__global__ void LayerNormKernel(const X* x, const R* residual,
                                int64_t residual_rows, void* sum,
                                FloatStorage sum_storage,
                                const float* __restrict__ scale,
                                const float* __restrict__ bias, Y* y,
                                int64_t cols, float epsilon) {
  const int64_t row = blockIdx.x;
  const RowSource<X, R> source =
      RowSource<X, R>::Of(x, residual, residual_rows, sum_storage, row, cols);
  void* row_sum = RowSum(sum, sum_storage, row, cols);
  Y* row_out = y + row * cols;
  float cached[kCached];
  MeanM2 part = EmptyMeanM2();
#pragma unroll
  for (int k = 0; k < kCached; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kThreads;
    if (j < cols) {
      cached[k] = source(j);
      part = AddValue(part, cached[k]);
      if (row_sum != nullptr) StoreSum(row_sum, sum_storage, j, cached[k]);
    }
  }
  for (int64_t j = threadIdx.x + kLayerNormCachedCols; j < cols;
       j += kThreads) {
    const float v = source(j);
    part = AddValue(part, v);
    if (row_sum != nullptr) StoreSum(row_sum, sum_storage, j, v);
  }
  const MeanM2 stats = BlockReduce<kThreads>(
      part, [](MeanM2 a, MeanM2 b) { return Combine(a, b); });
  const float mean = stats.mean;
  const float inv_std = InvStdDev(stats, epsilon);
  auto store = [&](int64_t j, float v) {
    row_out[j] = FromFloat<Y>(LayerNormValue(v, mean, inv_std, scale[j],
                                             bias != nullptr ? bias[j] : 0.0f));
  };
#pragma unroll
  for (int k = 0; k < kCached; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kThreads;
    if (j < cols) store(j, cached[k]);
  }
  for (int64_t j = threadIdx.x + kLayerNormCachedCols; j < cols; j += kThreads)
    store(j, source(j));
}

// The rows of at most kWarpCols columns (a transformer's 768 or 1024): one
// warp per row, kWarpsPerBlock rows per block, each lane holding its
// kWarpCached elements in registers; the mean, then the squared deviations
// from it, summed over the warp by shuffles (two passes over registers,
// without the block-wide reduction's synchronizations). Lane 0's sums are
// every lane's, so all lanes normalize with the same statistics.
constexpr int kWarpsPerBlock = 8;
constexpr int kWarpCached = 32;
constexpr int64_t kWarpCols = 32 * kWarpCached;

__device__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return __shfl_sync(0xffffffffu, v, 0);
}

template <typename X, typename R, typename Y>
__global__ void LayerNormWarpKernel(const X* x, const R* residual,
                                    int64_t residual_rows, void* sum,
                                    FloatStorage sum_storage,
                                    const float* __restrict__ scale,
                                    const float* __restrict__ bias, Y* y,
                                    int64_t rows, int64_t cols, float epsilon) {
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp: no shuffle is left waiting
  const int lane = threadIdx.x % 32;
  const RowSource<X, R> source =
      RowSource<X, R>::Of(x, residual, residual_rows, sum_storage, row, cols);
  void* row_sum = RowSum(sum, sum_storage, row, cols);
  float cached[kWarpCached];
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kWarpCached; ++k) {
    const int64_t j = lane + k * 32;
    cached[k] = 0.0f;
    if (j < cols) {
      cached[k] = source(j);
      total += cached[k];
      if (row_sum != nullptr) StoreSum(row_sum, sum_storage, j, cached[k]);
    }
  }
  const float mean = WarpSum(total) / static_cast<float>(cols);
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kWarpCached; ++k) {
    const int64_t j = lane + k * 32;
    if (j < cols) squares += (cached[k] - mean) * (cached[k] - mean);
  }
  const MeanM2 stats{static_cast<float>(cols), mean, WarpSum(squares)};
  const float inv_std = InvStdDev(stats, epsilon);
  Y* row_out = y + row * cols;
#pragma unroll
  for (int k = 0; k < kWarpCached; ++k) {
    const int64_t j = lane + k * 32;
    if (j < cols) {
      row_out[j] =
          FromFloat<Y>(LayerNormValue(cached[k], mean, inv_std, scale[j],
                                      bias != nullptr ? bias[j] : 0.0f));
    }
  }
}

}  // namespace

cudaError_t LaunchLayerNorm(const LayerNormLaunch& a, cudaStream_t stream) {
  if (a.rows == 0 || a.cols == 0) return cudaSuccess;
  if (a.rows > 2147483647) return cudaErrorInvalidConfiguration;
  const bool has_residual = a.residual.data != nullptr;
  if (has_residual && (a.residual_rows <= 0 || a.rows % a.residual_rows != 0))
    return cudaErrorInvalidValue;
  const FloatStorage residual_storage =
      has_residual ? a.residual.storage : a.x.storage;
  // One 16-bit type per launch: a 16-bit sum may come from float32
  // operands, never from operands of the other 16-bit type.
  auto clash = [&](FloatStorage s) {
    return s != FloatStorage::kFloat && s != a.sum.storage;
  };
  if (a.sum.data != nullptr && a.sum.storage != FloatStorage::kFloat &&
      (clash(a.x.storage) || clash(residual_storage) || clash(a.y.storage))) {
    return cudaErrorInvalidValue;
  }
  return WithFloatTypes(
      [&](auto x_tag, auto r_tag, auto y_tag) {
        using X = decltype(x_tag);
        using R = decltype(r_tag);
        using Y = decltype(y_tag);
        if (a.cols <= kWarpCols) {
          const int64_t blocks = (a.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
          LayerNormWarpKernel<X, R, Y><<<static_cast<unsigned>(blocks),
                                         kWarpsPerBlock * 32, 0, stream>>>(
              static_cast<const X*>(a.x.data),
              static_cast<const R*>(a.residual.data), a.residual_rows,
              a.sum.data, a.sum.storage, a.scale, a.bias,
              static_cast<Y*>(a.y.data), a.rows, a.cols, a.epsilon);
          return cudaGetLastError();
        }
        LayerNormKernel<X, R, Y>
            <<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(
                static_cast<const X*>(a.x.data),
                static_cast<const R*>(a.residual.data), a.residual_rows,
                a.sum.data, a.sum.storage, a.scale, a.bias,
                static_cast<Y*>(a.y.data), a.cols, a.epsilon);
        return cudaGetLastError();
      },
      a.x.storage, residual_storage, a.y.storage);
}

}  // namespace coalesce::kernels::cuda
