#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/layer_norm_math.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

__global__ void LayerNormKernel(const float* __restrict__ x,
                                const float* __restrict__ scale,
                                const float* __restrict__ bias, float* y,
                                int64_t cols, float epsilon) {
  const float* row_in = x + blockIdx.x * cols;
  float* row_out = y + blockIdx.x * cols;
  MeanM2 part = EmptyMeanM2();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    part = AddValue(part, row_in[j]);
  }
  const MeanM2 row = BlockReduce<kThreads>(
      part, [](MeanM2 a, MeanM2 b) { return Combine(a, b); });
  const float mean = row.mean;
  const float inv_std = InvStdDev(row, epsilon);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    row_out[j] = LayerNormValue(row_in[j], mean, inv_std, scale[j],
                                bias != nullptr ? bias[j] : 0.0f);
  }
}

}  // namespace

cudaError_t LaunchLayerNorm(const float* x, const float* scale,
                            const float* bias, float* y, int64_t rows,
                            int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidConfiguration;
  LayerNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, scale, bias, y, cols, epsilon);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
