#include "kernels/cpu/pad.h"

#include <cstring>

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
  const size_t rank = in_dims.size();
  std::vector<int64_t> out_dims(rank);
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) {
    out_dims[d] = in_dims[d] + begin[d] + end[d];
    total *= out_dims[d];
  }
  if (total == 0) return;
  // Per dim, the source coordinate of every output coordinate.
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    maps[d].resize(out_dims[d]);
    for (int64_t o = 0; o < out_dims[d]; ++o)
      maps[d][o] = SourceIndex(o, in_dims[d], begin[d], mode);
  }
  const std::vector<int64_t> strides = DenseStrides(in_dims);
  const char* in = static_cast<const char*>(src);
  char* dst = static_cast<char*>(out);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      const int64_t s = maps[d][index[d]];
      inside = s >= 0;
      offset += s * strides[d];
    }
    std::memcpy(dst,
                inside ? in + offset * element_bytes
                       : static_cast<const char*>(constant_value),
                element_bytes);
    dst += element_bytes;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace coalesce::kernels
