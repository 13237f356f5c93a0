#include "kernels/cpu/compare.h"

#include <array>
#include <cmath>
#include <cstring>

#include "kernels/cpu/half.h"
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

// 16-bit floats compare as the floats they hold (so -0 == 0, NaN != NaN).
template <typename T>
T ValueOf(T v) {
  return v;
}
float ValueOf(Float16 v) { return ToFloat(v); }
float ValueOf(BFloat16 v) { return ToFloat(v); }

template <typename T>
bool Compare(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kLessOrEqual:
      return a <= b;
    case CompareOp::kGreaterOrEqual:
      return a >= b;
    case CompareOp::kAnd:
      return a && b;
    case CompareOp::kOr:
      return a || b;
    case CompareOp::kXor:
      return static_cast<bool>(a) != static_cast<bool>(b);
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
    *out++ = Compare(op, ValueOf(a[at[0]]), ValueOf(b[at[1]]));
  });
}

#define COALESCE_INSTANTIATE(T)                                   \
  template void BroadcastCompare<T>(                              \
      CompareOp, const T*, const std::vector<int64_t>&, const T*, \
      const std::vector<int64_t>&, const std::vector<int64_t>&, bool*);
COALESCE_INSTANTIATE(float)
COALESCE_INSTANTIATE(double)
COALESCE_INSTANTIATE(Float16)
COALESCE_INSTANTIATE(BFloat16)
COALESCE_INSTANTIATE(int8_t)
COALESCE_INSTANTIATE(int16_t)
COALESCE_INSTANTIATE(int32_t)
COALESCE_INSTANTIATE(int64_t)
COALESCE_INSTANTIATE(uint8_t)
COALESCE_INSTANTIATE(uint16_t)
COALESCE_INSTANTIATE(uint32_t)
COALESCE_INSTANTIATE(uint64_t)
COALESCE_INSTANTIATE(bool)
#undef COALESCE_INSTANTIATE

void BroadcastEqualBy(const void* a, const std::vector<int64_t>& a_dims,
                      const void* b, const std::vector<int64_t>& b_dims,
                      const std::vector<int64_t>& out_dims,
                      size_t element_bytes, ElementEqualFn equal, bool* out) {
  std::array<std::vector<int64_t>, 2> strides = {
      BroadcastStrides(a_dims, out_dims), BroadcastStrides(b_dims, out_dims)};
  const char* as = static_cast<const char*>(a);
  const char* bs = static_cast<const char*>(b);
  ForEachBroadcast<2>(strides, out_dims, [&](const std::array<int64_t, 2>& at) {
    *out++ = equal(as + at[0] * element_bytes, bs + at[1] * element_bytes);
  });
}

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

template <typename T>
void IsNaN(const T* in, int64_t count, bool* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = std::isnan(ValueOf(in[i]));
}

template <typename T>
void IsInf(const T* in, int64_t count, bool detect_positive,
           bool detect_negative, bool* out) {
  for (int64_t i = 0; i < count; ++i) {
    const auto v = ValueOf(in[i]);
    out[i] = std::isinf(v) && (v > 0 ? detect_positive : detect_negative);
  }
}

#define COALESCE_INSTANTIATE(T)                     \
  template void IsNaN<T>(const T*, int64_t, bool*); \
  template void IsInf<T>(const T*, int64_t, bool, bool, bool*);
COALESCE_INSTANTIATE(float)
COALESCE_INSTANTIATE(double)
COALESCE_INSTANTIATE(Float16)
COALESCE_INSTANTIATE(BFloat16)
#undef COALESCE_INSTANTIATE

}  // namespace coalesce::kernels
