#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/layer_norm_math.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

// X and Y: float, or uint16_t for float16 bits (float_storage.h). x and y
// may be the same array (no __restrict__ on them): each element is read
// before it is written, by the thread that writes it, after the whole row
// was read for the statistics.
template <typename X, typename Y>
__global__ void LayerNormKernel(const X* x, const float* __restrict__ scale,
                                const float* __restrict__ bias, Y* y,
                                int64_t cols, float epsilon) {
  const X* row_in = x + blockIdx.x * cols;
  Y* row_out = y + blockIdx.x * cols;
  MeanM2 part = EmptyMeanM2();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    part = AddValue(part, ToFloat(row_in[j]));
  }
  const MeanM2 row = BlockReduce<kThreads>(
      part, [](MeanM2 a, MeanM2 b) { return Combine(a, b); });
  const float mean = row.mean;
  const float inv_std = InvStdDev(row, epsilon);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    row_out[j] =
        FromFloat<Y>(LayerNormValue(ToFloat(row_in[j]), mean, inv_std, scale[j],
                                    bias != nullptr ? bias[j] : 0.0f));
  }
}

}  // namespace

cudaError_t LaunchLayerNorm(FloatSource x, const float* scale,
                            const float* bias, FloatTarget y, int64_t rows,
                            int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidConfiguration;
  return WithFloatType(x.storage, [&](auto x_tag) {
    return WithFloatType(y.storage, [&](auto y_tag) {
      using X = decltype(x_tag);
      using Y = decltype(y_tag);
      LayerNormKernel<X, Y>
          <<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
              static_cast<const X*>(x.data), scale, bias,
              static_cast<Y*>(y.data), cols, epsilon);
      return cudaGetLastError();
    });
  });
}

}  // namespace coalesce::kernels::cuda
