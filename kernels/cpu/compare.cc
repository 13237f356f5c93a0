#include "kernels/cpu/compare.h"

#include <array>
#include <cstring>

#include "kernels/cpu/strided_copy.h"

namespace coalesce::kernels {
namespace {

// Walks every index of out_dims in row-major order and calls
// visit(offsets) with each input's element offset.
template <size_t N, typename Visit>
void ForEachBroadcast(const std::array<std::vector<int64_t>, N>& strides,
                      const std::vector<int64_t>& out_dims, Visit visit) {
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  const size_t rank = out_dims.size();
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t i = 0; i < total; ++i) {
    visit(offsets);
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < out_dims[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * out_dims[d];
      index[d] = 0;
    }
  }
}

template <typename T>
bool Compare(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kGreater:
      return a > b;
  }
  return false;
}

}  // namespace

template <typename T>
void BroadcastCompare(CompareOp op, const T* a,
                      const std::vector<int64_t>& a_dims, const T* b,
                      const std::vector<int64_t>& b_dims,
                      const std::vector<int64_t>& out_dims, bool* out) {
  std::array<std::vector<int64_t>, 2> strides = {
      BroadcastStrides(a_dims, out_dims), BroadcastStrides(b_dims, out_dims)};
  ForEachBroadcast<2>(strides, out_dims, [&](const std::array<int64_t, 2>& at) {
    *out++ = Compare(op, a[at[0]], b[at[1]]);
  });
}

template void BroadcastCompare<float>(CompareOp, const float*,
                                      const std::vector<int64_t>&, const float*,
                                      const std::vector<int64_t>&,
                                      const std::vector<int64_t>&, bool*);
template void BroadcastCompare<int64_t>(CompareOp, const int64_t*,
                                        const std::vector<int64_t>&,
                                        const int64_t*,
                                        const std::vector<int64_t>&,
                                        const std::vector<int64_t>&, bool*);
template void BroadcastCompare<int32_t>(CompareOp, const int32_t*,
                                        const std::vector<int64_t>&,
                                        const int32_t*,
                                        const std::vector<int64_t>&,
                                        const std::vector<int64_t>&, bool*);
template void BroadcastCompare<bool>(CompareOp, const bool*,
                                     const std::vector<int64_t>&, const bool*,
                                     const std::vector<int64_t>&,
                                     const std::vector<int64_t>&, bool*);

void LogicalNot(const bool* in, int64_t count, bool* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = !in[i];
}

void BroadcastWhere(const bool* cond, const std::vector<int64_t>& cond_dims,
                    const void* x, const std::vector<int64_t>& x_dims,
                    const void* y, const std::vector<int64_t>& y_dims,
                    const std::vector<int64_t>& out_dims, size_t element_bytes,
                    void* out) {
  std::array<std::vector<int64_t>, 3> strides = {
      BroadcastStrides(cond_dims, out_dims), BroadcastStrides(x_dims, out_dims),
      BroadcastStrides(y_dims, out_dims)};
  const char* xs = static_cast<const char*>(x);
  const char* ys = static_cast<const char*>(y);
  char* dst = static_cast<char*>(out);
  ForEachBroadcast<3>(strides, out_dims, [&](const std::array<int64_t, 3>& at) {
    const char* from =
        cond[at[0]] ? xs + at[1] * element_bytes : ys + at[2] * element_bytes;
    std::memcpy(dst, from, element_bytes);
    dst += element_bytes;
  });
}

}  // namespace coalesce::kernels
