#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/softmax_math.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

__global__ void SoftmaxKernel(const float* __restrict__ x, float* y,
                              int64_t cols) {
  const float* row_in = x + blockIdx.x * cols;
  float* row_out = y + blockIdx.x * cols;
  MaxSum part = EmptyMaxSum();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    part = AddElement(part, row_in[j]);
  }
  const MaxSum row = BlockReduce<kThreads>(
      part, [](MaxSum a, MaxSum b) { return Combine(a, b); });
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    row_out[j] = SoftmaxValue(row_in[j], row);
  }
}

}  // namespace

cudaError_t LaunchSoftmax(const float* x, float* y, int64_t rows, int64_t cols,
                          cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidConfiguration;
  SoftmaxKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y,
                                                                      cols);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
