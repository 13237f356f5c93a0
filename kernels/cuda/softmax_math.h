// The math of the CUDA Softmax kernel (softmax.cu): a row's maximum and its
// sum of exp(x - max), combined from partial results in any order (one
// block's threads each take part of the row, then reduce). Host and device;
// unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_SOFTMAX_MATH_H_
#define COALESCE_KERNELS_CUDA_SOFTMAX_MATH_H_

#include <math.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// A partial row: its maximum and the sum of exp(x - max) over its elements.
// The empty part is {-INFINITY, 0}.
struct MaxSum {
  float max;
  float sum;
};

COALESCE_HD MaxSum EmptyMaxSum() { return {-INFINITY, 0.0f}; }

// -INFINITY (a masked score) adds nothing, even to a part of -INFINITY
// only (exp(-inf - -inf) would be NaN).
COALESCE_HD MaxSum AddElement(MaxSum part, float x) {
  if (x == -INFINITY) return part;
  if (x <= part.max) return {part.max, part.sum + expf(x - part.max)};
  return {x, part.sum * expf(part.max - x) + 1.0f};
}

COALESCE_HD MaxSum Combine(MaxSum a, MaxSum b) {
  if (b.sum == 0.0f) return a;
  if (a.sum == 0.0f) return b;
  const float m = a.max > b.max ? a.max : b.max;
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// One output element, given the whole row's MaxSum.
COALESCE_HD float SoftmaxValue(float x, MaxSum row) {
  return expf(x - row.max) / row.sum;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_SOFTMAX_MATH_H_
