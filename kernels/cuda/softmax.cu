#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/softmax_math.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

// X and Y: float, uint16_t for float16 bits, or BFloat16Bits
// (float_storage.h). x and y
// may be the same array (no __restrict__): each element is read before it
// is written, by the thread that writes it, after the whole row was read
// for the max and sum.
template <typename X, typename Y>
__global__ void SoftmaxKernel(const X* x, Y* y, int64_t cols) {
  const X* row_in = x + blockIdx.x * cols;
  Y* row_out = y + blockIdx.x * cols;
  MaxSum part = EmptyMaxSum();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    part = AddElement(part, ToFloat(row_in[j]));
  }
  const MaxSum row = BlockReduce<kThreads>(
      part, [](MaxSum a, MaxSum b) { return Combine(a, b); });
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    row_out[j] = FromFloat<Y>(SoftmaxValue(ToFloat(row_in[j]), row));
  }
}

}  // namespace

cudaError_t LaunchSoftmax(FloatSource x, FloatTarget y, int64_t rows,
                          int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidConfiguration;
  return WithFloatTypes(
      [&](auto x_tag, auto y_tag) {
        using X = decltype(x_tag);
        using Y = decltype(y_tag);
        SoftmaxKernel<X, Y>
            <<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
                static_cast<const X*>(x.data), static_cast<Y*>(y.data), cols);
        return cudaGetLastError();
      },
      x.storage, y.storage);
}

}  // namespace coalesce::kernels::cuda
