// Transpose (axis permutation) of a row-major tensor of any element size:
// out.dims[i] = in.dims[perm[i]]. Stateless and thread-safe; allocates
// nothing for rank <= 8 and elements of 1, 2, 4, 8 or 16 bytes.
#ifndef COALESCE_KERNELS_CPU_TRANSPOSE_H_
#define COALESCE_KERNELS_CPU_TRANSPOSE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

// REQUIRES: perm is a permutation of 0..in_dims.size()-1; `out` holds as
// many elements as `in` and does not overlap it.
void Transpose(const void* in, const std::vector<int64_t>& in_dims,
               const std::vector<int64_t>& perm, size_t element_size,
               void* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_TRANSPOSE_H_
