// StridedCopy: gathers a strided view of a tensor into dense memory, for any
// element type (sizes in bytes). Slice (offset and steps, negative too),
// Split, Expand (stride 0 on broadcast dims) and Tile (a [repeat, dim] pair of
// dims per axis with strides [0, stride]) are all this one loop. Stateless and
// thread-safe; StridedCopy allocates nothing for up to 17 out_dims.
#ifndef COALESCE_KERNELS_CPU_STRIDED_COPY_H_
#define COALESCE_KERNELS_CPU_STRIDED_COPY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

// out (dense, row-major, dims out_dims) at index (i0, ..., ik) =
// src element sum_d(i_d * src_strides[d]); strides are in elements and may be
// zero or negative. `src` points at the element for index (0, ..., 0).
// REQUIRES: out_dims.size() == src_strides.size(); every addressed source
// element exists; out overlaps no source element.
void StridedCopy(const void* src, const std::vector<int64_t>& out_dims,
                 const std::vector<int64_t>& src_strides, size_t element_bytes,
                 void* out);

// Row-major element strides of a dense tensor of `dims`.
std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims);

// Element strides of a dense tensor of `dims` read as a tensor of `out_dims`
// (right-aligned; 0 along broadcast dims), for StridedCopy to expand it.
// REQUIRES: dims broadcasts to out_dims.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_STRIDED_COPY_H_
