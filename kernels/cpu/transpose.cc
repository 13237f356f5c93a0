#include "kernels/cpu/transpose.h"

#include <algorithm>
#include <cstring>
#include <utility>

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

// A transpose that, once size-1 axes are dropped and axes that stay adjacent
// are merged, swaps the last two axes of [batch, rows, cols]:
// out[b][c][r] = in[b][r][c] (NCHW <-> NHWC is one, with rows = C and
// cols = H * W, or the reverse). False for any other permutation.
struct MatrixTranspose {
  int64_t batch = 1, rows = 1, cols = 1;
};

bool AsMatrixTranspose(const std::vector<int64_t>& in_dims,
                       const std::vector<int64_t>& perm, MatrixTranspose* t) {
  // Input axes in output order, without size-1 axes.
  Dims order;
  for (int64_t axis : perm)
    if (in_dims[axis] != 1) order.push_back(axis);
  // Runs of input axes that stay consecutive: (first input axis, size).
  absl::InlinedVector<std::pair<int64_t, int64_t>, 8> groups;
  for (size_t i = 0; i < order.size(); ++i) {
    const bool extends = i > 0 && order[i] == order[i - 1] + 1;
    if (extends) {
      groups.back().second *= in_dims[order[i]];
    } else {
      groups.push_back({order[i], in_dims[order[i]]});
    }
  }
  const auto before = [&](size_t a, size_t b) {
    return groups[a].first < groups[b].first;
  };
  if (groups.size() == 2 && before(1, 0)) {
    *t = {1, groups[1].second, groups[0].second};
    return true;
  }
  if (groups.size() == 3 && before(0, 2) && before(2, 1)) {
    *t = {groups[0].second, groups[2].second, groups[1].second};
    return true;
  }
  return false;
}

// MatrixTranspose in square tiles, so reads and writes both stay within a
// few cache lines; tiles run in parallel on the caller's intra-op threads.
template <typename T>
void TiledTranspose(const T* in, const MatrixTranspose& t, T* out) {
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (t.rows + kTile - 1) / kTile;
  const int64_t work = t.batch * row_tiles;
#pragma omp parallel for if (t.batch * t.rows * t.cols >= (int64_t{1} << 15))
  for (int64_t job = 0; job < work; ++job) {
    const int64_t b = job / row_tiles;
    const int64_t r0 = job % row_tiles * kTile;
    const int64_t r1 = std::min(t.rows, r0 + kTile);
    const T* src = in + b * t.rows * t.cols;
    T* dst = out + b * t.rows * t.cols;
    for (int64_t c0 = 0; c0 < t.cols; c0 += kTile) {
      const int64_t c1 = std::min(t.cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          dst[c * t.rows + r] = src[r * t.cols + c];
    }
  }
}

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
  MatrixTranspose matrix;
  if (element_size == 4 && AsMatrixTranspose(in_dims, perm, &matrix)) {
    return TiledTranspose(static_cast<const uint32_t*>(in), matrix,
                          static_cast<uint32_t*>(out));
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
