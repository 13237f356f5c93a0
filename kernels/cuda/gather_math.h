// The index math of the CUDA Gather kernel (gather.cu): where output
// element i of a Gather comes from. Host and device; unit-tested on the host
// (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_GATHER_MATH_H_
#define COALESCE_KERNELS_CUDA_GATHER_MATH_H_

#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// Gather of `data` viewed as [outer, axis_dim, inner] with `num_indices`
// indices: output [outer, num_indices, inner]. The source offset of output
// element `i` given the index value `index` (negative counts from the end),
// or -1 when the index is out of range (the kernel then writes zero).
COALESCE_HD int64_t GatherSourceOffset(int64_t i, int64_t index,
                                       int64_t axis_dim, int64_t num_indices,
                                       int64_t inner) {
  if (index < 0) index += axis_dim;
  if (index < 0 || index >= axis_dim) return -1;
  const int64_t j = i % inner;
  const int64_t outer = i / (inner * num_indices);
  return (outer * axis_dim + index) * inner + j;
}

// Which index output element `i` uses.
COALESCE_HD int64_t GatherIndexPosition(int64_t i, int64_t num_indices,
                                        int64_t inner) {
  return (i / inner) % num_indices;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_GATHER_MATH_H_
