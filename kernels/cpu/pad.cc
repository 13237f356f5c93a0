#include "kernels/cpu/pad.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu/strided_copy.h"

namespace coalesce::kernels {
namespace {

// Source coordinate for output coordinate `o` along a dim of size `n`
// padded by `begin`; -1 for the constant border.
int64_t SourceIndex(int64_t o, int64_t n, int64_t begin, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      // The mirrored sequence repeats with period 2(n-1): fold into one
      // period, then reflect its second half. O(1) for any pad width.
      const int64_t period = 2 * (n - 1);
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
  }
  return -1;
}

}  // namespace

void Pad(const void* src, const std::vector<int64_t>& in_dims,
         const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
         PadMode mode, const void* constant_value, size_t element_bytes,
         void* out) {
  PadPlan(in_dims, begin, end, mode)
      .Run(src, constant_value, element_bytes, out);
}

PadPlan::PadPlan(const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& begin,
                 const std::vector<int64_t>& end, PadMode mode)
    : out_dims_(in_dims.size()), in_strides_(DenseStrides(in_dims)) {
  const size_t rank = in_dims.size();
  total_ = 1;
  for (size_t d = 0; d < rank; ++d) {
    out_dims_[d] = in_dims[d] + begin[d] + end[d];
    total_ *= out_dims_[d];
  }
  if (total_ == 0 || rank == 0) return;
  maps_.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    maps_[d].resize(out_dims_[d]);
    for (int64_t o = 0; o < out_dims_[d]; ++o)
      maps_[d][o] = SourceIndex(o, in_dims[d], begin[d], mode);
  }
  const int64_t last = out_dims_[rank - 1];
  interior_begin_ = std::clamp<int64_t>(begin[rank - 1], 0, last);
  interior_end_ = std::clamp<int64_t>(begin[rank - 1] + in_dims[rank - 1],
                                      interior_begin_, last);
}

void PadPlan::Run(const void* src, const void* constant_value,
                  size_t element_bytes, void* out) const {
  if (total_ == 0) return;
  const size_t rank = out_dims_.size();
  if (rank == 0) {  // a scalar pads to itself
    std::memcpy(out, src, element_bytes);
    return;
  }
  const char* in = static_cast<const char*>(src);
  const char* fill = static_cast<const char*>(constant_value);
  char* dst = static_cast<char*>(out);
  const std::vector<int64_t>& last_map = maps_[rank - 1];
  const int64_t row_length = out_dims_[rank - 1];
  const size_t interior_bytes =
      static_cast<size_t>(interior_end_ - interior_begin_) * element_bytes;
  // Output coordinates of the current row, all but the last axis.
  absl::InlinedVector<int64_t, 8> index(rank - 1, 0);
  for (int64_t row = 0; row < total_ / row_length; ++row) {
    int64_t offset = 0;  // of the row's source row, in elements
    bool inside = true;
    for (size_t d = 0; d + 1 < rank && inside; ++d) {
      const int64_t s = maps_[d][index[d]];
      inside = s >= 0;
      offset += s * in_strides_[d];
    }
    if (!inside) {  // a border row: the constant throughout
      for (int64_t o = 0; o < row_length; ++o, dst += element_bytes)
        std::memcpy(dst, fill, element_bytes);
    } else {
      const char* source = in + offset * element_bytes;
      for (int64_t o = 0; o < row_length; ++o) {
        if (o == interior_begin_ && interior_bytes > 0) {
          std::memcpy(dst, source + last_map[o] * element_bytes,
                      interior_bytes);
          dst += interior_bytes;
          o = interior_end_ - 1;
          continue;
        }
        const int64_t s = last_map[o];
        std::memcpy(dst, s >= 0 ? source + s * element_bytes : fill,
                    element_bytes);
        dst += element_bytes;
      }
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < out_dims_[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace coalesce::kernels
