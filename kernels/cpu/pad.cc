#include "kernels/cpu/pad.h"

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
    case PadMode::kReflect:
      if (n == 1) return 0;
      // Mirror with period 2(n-1) until inside.
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      return i;
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
  if (total_ == 0) return;
  maps_.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    maps_[d].resize(out_dims_[d]);
    for (int64_t o = 0; o < out_dims_[d]; ++o)
      maps_[d][o] = SourceIndex(o, in_dims[d], begin[d], mode);
  }
}

void PadPlan::Run(const void* src, const void* constant_value,
                  size_t element_bytes, void* out) const {
  if (total_ == 0) return;
  const size_t rank = out_dims_.size();
  const char* in = static_cast<const char*>(src);
  char* dst = static_cast<char*>(out);
  absl::InlinedVector<int64_t, 8> index(rank, 0);
  for (int64_t i = 0; i < total_; ++i) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      const int64_t s = maps_[d][index[d]];
      inside = s >= 0;
      offset += s * in_strides_[d];
    }
    std::memcpy(dst,
                inside ? in + offset * element_bytes
                       : static_cast<const char*>(constant_value),
                element_bytes);
    dst += element_bytes;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_dims_[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace coalesce::kernels
