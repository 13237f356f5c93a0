// Index-driven copies and running sums for any element type (sizes in
// bytes) or any arithmetic type: GatherElements, GatherND, ScatterND,
// ScatterElements, Trilu, CumSum, TopK, OneHot. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_INDEXING_H_
#define COALESCE_KERNELS_CPU_INDEXING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace coalesce::kernels {

// out[i0..in] = src[i0.., index[i0..in] (negative: + src_dims[axis]), ..]
// along `axis`, for every index of `index_dims` (ONNX GatherElements).
// REQUIRES: src_dims and index_dims have the same rank, axis < rank, and
// index_dims[d] <= src_dims[d] for d != axis; out holds the index count
// times element_bytes. InvalidArgument (out partly written) when an index is
// outside [-src_dims[axis], src_dims[axis]).
template <typename Index>
absl::Status GatherElements(const void* src,
                            const std::vector<int64_t>& src_dims,
                            size_t element_bytes, const Index* indices,
                            const std::vector<int64_t>& index_dims,
                            int64_t axis, void* out);

// ONNX GatherND: `data` as [batch, data_dims...] and `indices` as
// [batch, tuples, k]; each tuple of k indices (negative: + the dim) selects
// a slice of data_dims[k:] (slice_elements elements) copied to out in tuple
// order. InvalidArgument (out partly written) for an index out of range.
// REQUIRES: data_dims.size() >= k.
template <typename Index>
absl::Status GatherND(const void* data, int64_t batch,
                      const std::vector<int64_t>& data_dims,
                      size_t element_bytes, const Index* indices,
                      int64_t tuples, int64_t k, void* out);

// ONNX ScatterND with reduction "none": out (already a copy of data, shape
// data_dims) gets each updates slice written at the slice of data_dims[k:]
// its k-tuple selects, in tuple order. InvalidArgument for an index out of
// range.
template <typename Index>
absl::Status ScatterND(const std::vector<int64_t>& data_dims,
                       size_t element_bytes, const Index* indices,
                       int64_t tuples, int64_t k, const void* updates,
                       void* out);

// The upper (or lower) triangle of each of `batch` [rows, cols] matrices,
// with the diagonal shifted by k (ONNX Trilu): upper keeps j - i >= k, lower
// keeps j - i <= k; the other elements become zero bytes.
void Trilu(const void* src, int64_t batch, int64_t rows, int64_t cols,
           size_t element_bytes, int64_t k, bool upper, void* out);

// Running sums along the middle axis of [outer, dim, inner] (ONNX CumSum):
// exclusive leaves out the element itself, reverse sums from the end.
// Defined for T = float, double, int32_t, int64_t, uint32_t and uint64_t;
// integers wrap on overflow.
template <typename T>
void CumSum(const T* in, int64_t outer, int64_t dim, int64_t inner,
            bool exclusive, bool reverse, T* out);

// For every position i (row-major) of an index tensor of `index_dims`,
// calls visit(i, offset): the element offset in a tensor of `dims` whose
// `axis` coordinate is indices[i] (negative: + dims[axis]) and whose other
// coordinates are i's (GatherElements' and ScatterElements' walk).
// InvalidArgument, after visiting the positions before it, for an index
// out of range. REQUIRES: equal ranks, axis < rank.
template <typename Index, typename Visit>
absl::Status ForEachAlongAxis(const std::vector<int64_t>& dims,
                              const Index* indices,
                              const std::vector<int64_t>& index_dims,
                              int64_t axis, Visit visit) {
  const size_t rank = dims.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  int64_t total = 1;
  for (int64_t d : index_dims) total *= d;
  std::vector<int64_t> at(rank, 0);
  int64_t base = 0;  // offset of `at` with its axis coordinate at 0
  for (int64_t i = 0; i < total; ++i) {
    int64_t index = static_cast<int64_t>(indices[i]);
    if (index < -dims[axis] || index >= dims[axis]) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", index, " is out of range for axis ", axis,
                       " of size ", dims[axis]));
    }
    if (index < 0) index += dims[axis];
    visit(i, base + index * strides[axis]);
    for (size_t d = rank; d-- > 0;) {
      if (static_cast<int64_t>(d) != axis) base += strides[d];
      if (++at[d] < index_dims[d]) break;
      if (static_cast<int64_t>(d) != axis) base -= strides[d] * at[d];
      at[d] = 0;
    }
  }
  return absl::OkStatus();
}

// ONNX ScatterElements: `out` (already a copy of data, shape `dims`) gets
// updates[i] combined into the element whose `axis` coordinate is
// indices[i] (negative: + dims[axis]) and whose other coordinates are i's,
// in order. `combine(dst, src)` writes the combination into dst (a copy, or
// a reduction). InvalidArgument for an index out of range.
template <typename Index, typename Combine>
absl::Status ScatterElements(const std::vector<int64_t>& dims,
                             size_t element_bytes, const Index* indices,
                             const std::vector<int64_t>& index_dims,
                             int64_t axis, const void* updates, void* out,
                             Combine combine) {
  const char* from = static_cast<const char*>(updates);
  char* to = static_cast<char*>(out);
  return ForEachAlongAxis(
      dims, indices, index_dims, axis, [&](int64_t i, int64_t offset) {
        combine(to + offset * element_bytes, from + i * element_bytes);
      });
}

// The k largest (or smallest) elements along the middle axis of
// [outer, dim, inner], by value then lower index, sorted; values and their
// int64 positions (not written when `indices` is null). Defined for
// T = float, double, int32_t, int64_t.
template <typename T>
void TopK(const T* in, int64_t outer, int64_t dim, int64_t inner, int64_t k,
          bool largest, T* values, int64_t* indices);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_INDEXING_H_
