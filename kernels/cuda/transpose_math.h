// The index mapping of the CUDA Transpose kernel (transpose.cu): for each
// element of the output, the offset of the input element it copies. Host and
// device; unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_TRANSPOSE_MATH_H_
#define COALESCE_KERNELS_CUDA_TRANSPOSE_MATH_H_

#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

inline constexpr int kMaxTransposeRank = 8;

// Built on the host by MakeTransposeIndexer, passed to kernels by value.
struct TransposeIndexer {
  int rank = 0;
  int64_t out_dims[kMaxTransposeRank] = {};
  // The input stride of output axis d (input axis perm[d]).
  int64_t in_strides[kMaxTransposeRank] = {};
};

COALESCE_HD int64_t TransposeSourceOffset(const TransposeIndexer& ix,
                                          int64_t index) {
  int64_t offset = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    offset += (index % ix.out_dims[d]) * ix.in_strides[d];
    index /= ix.out_dims[d];
  }
  return offset;
}

// Fills `ix` for an input of `in_dims` (row-major) and output axis d = input
// axis perm[d]; returns the element count, or -1 when the rank is too large
// or perm is not a permutation of [0, rank).
inline int64_t MakeTransposeIndexer(const int64_t* in_dims, const int64_t* perm,
                                    int rank, TransposeIndexer* ix) {
  if (rank < 0 || rank > kMaxTransposeRank) return -1;
  *ix = TransposeIndexer{};
  ix->rank = rank;
  int64_t in_strides[kMaxTransposeRank] = {};
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= in_dims[d];
  }
  bool seen[kMaxTransposeRank] = {};
  for (int d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]]) return -1;
    seen[perm[d]] = true;
    ix->out_dims[d] = in_dims[perm[d]];
    ix->in_strides[d] = in_strides[perm[d]];
  }
  return stride;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_TRANSPOSE_MATH_H_
