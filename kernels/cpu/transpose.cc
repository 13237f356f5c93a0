#include "kernels/cpu/transpose.h"

#include <cstring>

#include "absl/container/inlined_vector.h"

namespace coalesce::kernels {
namespace {

// Per-call dim lists live inline up to rank 8, so a transpose allocates
// nothing.
using Dims = absl::InlinedVector<int64_t, 8>;

// Walks the output in order with an odometer over its dimensions; the
// innermost output dimension is a strided gather from the input.
template <typename T>
void TransposeTyped(const T* in, const Dims& out_dims, const Dims& in_strides,
                    T* out) {
  const size_t rank = out_dims.size();
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = in_strides[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= out_dims[d];
  Dims index(rank, 0);
  int64_t in_off = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const T* src = in + in_off;
    for (int64_t j = 0; j < inner; ++j) out[j] = src[j * inner_stride];
    out += inner;
    for (size_t d = rank - 1; d-- > 0;) {  // advance the outer odometer
      in_off += in_strides[d];
      if (++index[d] < out_dims[d]) break;
      in_off -= in_strides[d] * out_dims[d];
      index[d] = 0;
    }
  }
}

struct Bytes16 {
  char b[16];
};

}  // namespace

void Transpose(const void* in, const std::vector<int64_t>& in_dims,
               const std::vector<int64_t>& perm, size_t element_size,
               void* out) {
  const size_t rank = in_dims.size();
  int64_t count = 1;
  for (int64_t d : in_dims) count *= d;
  if (count == 0) return;
  if (rank == 0) {
    std::memcpy(out, in, element_size);
    return;
  }
  Dims in_strides(rank), out_dims(rank), perm_strides(rank);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    in_strides[d] = stride;
    stride *= in_dims[d];
  }
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = in_dims[perm[i]];
    perm_strides[i] = in_strides[perm[i]];
  }
  switch (element_size) {
    case 1:
      return TransposeTyped(static_cast<const uint8_t*>(in), out_dims,
                            perm_strides, static_cast<uint8_t*>(out));
    case 2:
      return TransposeTyped(static_cast<const uint16_t*>(in), out_dims,
                            perm_strides, static_cast<uint16_t*>(out));
    case 4:
      return TransposeTyped(static_cast<const uint32_t*>(in), out_dims,
                            perm_strides, static_cast<uint32_t*>(out));
    case 8:
      return TransposeTyped(static_cast<const uint64_t*>(in), out_dims,
                            perm_strides, static_cast<uint64_t*>(out));
    case 16:
      return TransposeTyped(static_cast<const Bytes16*>(in), out_dims,
                            perm_strides, static_cast<Bytes16*>(out));
    default:
      break;
  }
  // Other sizes: transpose byte-wise with the element as an extra last axis.
  std::vector<int64_t> dims = in_dims, p = perm;
  dims.push_back(static_cast<int64_t>(element_size));
  p.push_back(static_cast<int64_t>(rank));
  Transpose(in, dims, p, 1, out);
}

}  // namespace coalesce::kernels
