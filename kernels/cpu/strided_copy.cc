#include "kernels/cpu/strided_copy.h"

#include <cstring>

#include "absl/container/inlined_vector.h"

namespace coalesce::kernels {
namespace {

// Copies one innermost row of `n` elements with source stride `stride`.
template <size_t kBytes>
void CopyRow(const char* src, int64_t n, int64_t stride, char* out) {
  if (stride == 1) {
    std::memcpy(out, src, n * kBytes);
    return;
  }
  // Signed: a negative stride (Slice with a negative step) walks backwards.
  constexpr int64_t kStep = kBytes;
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * kStep, src + i * stride * kStep, kBytes);
}

void CopyRowAny(const char* src, int64_t n, int64_t stride, size_t bytes,
                char* out) {
  switch (bytes) {
    case 1:
      return CopyRow<1>(src, n, stride, out);
    case 2:
      return CopyRow<2>(src, n, stride, out);
    case 4:
      return CopyRow<4>(src, n, stride, out);
    case 8:
      return CopyRow<8>(src, n, stride, out);
    default:
      for (int64_t i = 0; i < n; ++i) {
        const int64_t step = static_cast<int64_t>(bytes);
        std::memcpy(out + i * step, src + i * stride * step, bytes);
      }
  }
}

}  // namespace

std::vector<int64_t> DenseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> strides(out_dims.size(), 0);
  int64_t stride = 1;
  const size_t shift = out_dims.size() - dims.size();
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d + shift] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

void StridedCopy(const void* src, const std::vector<int64_t>& out_dims,
                 const std::vector<int64_t>& src_strides, size_t element_bytes,
                 void* out) {
  const char* in = static_cast<const char*>(src);
  char* dst = static_cast<char*>(out);
  for (int64_t d : out_dims)
    if (d == 0) return;
  if (out_dims.empty()) {
    std::memcpy(dst, in, element_bytes);
    return;
  }
  const size_t rank = out_dims.size();
  const int64_t row = out_dims[rank - 1];
  const int64_t row_stride = src_strides[rank - 1];
  // Inline for up to 17 dims (Tile doubles a tensor's rank): no allocation.
  absl::InlinedVector<int64_t, 16> index(rank - 1, 0);
  int64_t offset = 0;  // source element offset of the current row
  while (true) {
    CopyRowAny(in + offset * static_cast<int64_t>(element_bytes), row,
               row_stride, element_bytes, dst);
    dst += row * element_bytes;
    // Odometer over the outer dims, last fastest.
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      offset += src_strides[d];
      if (++index[d] < out_dims[d]) break;
      offset -= src_strides[d] * out_dims[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace coalesce::kernels
