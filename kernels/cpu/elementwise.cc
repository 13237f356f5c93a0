#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "absl/container/inlined_vector.h"

namespace coalesce::kernels {
namespace {

// Runs of at least this many elements are split across OpenMP threads.
constexpr int64_t kParallelElements = 1 << 16;

// Integer Add, Sub and Mul go through an unsigned type, where overflow wraps
// instead of being undefined: the type's unsigned counterpart, or unsigned
// int for types narrower than int (which would otherwise be promoted to int
// and could overflow it, e.g. uint16 * uint16). Converting the result back
// keeps the low bits (modulo 2^bits, defined since C++20).
template <typename T, bool = std::is_integral_v<T>>
struct WideOf {
  using type = T;
};
template <typename T>
struct WideOf<T, true> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                  std::make_unsigned_t<T>>;
};
template <typename T>
using Wide = typename WideOf<T>::type;

template <typename T>
struct AddFn {
  T operator()(T x, T y) const { return T(Wide<T>(x) + Wide<T>(y)); }
};
template <typename T>
struct SubFn {
  T operator()(T x, T y) const { return T(Wide<T>(x) - Wide<T>(y)); }
};
template <typename T>
struct MulFn {
  T operator()(T x, T y) const { return T(Wide<T>(x) * Wide<T>(y)); }
};
template <typename T>
struct DivFn {
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        // MIN / -1 wraps to MIN.
        if (y == -1) return T(Wide<T>(0) - Wide<T>(x));
      }
    }
    return T(x / y);
  }
};

// The truncated remainder (sign of the dividend).
template <typename T>
struct FmodFn {
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return 0;
      }
      return T(x % y);
    } else {
      return std::fmod(x, y);
    }
  }
};
// The floored remainder (sign of the divisor).
template <typename T>
struct ModFn {
  T operator()(T x, T y) const {
    const T r = FmodFn<T>()(x, y);
    if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) {
      if (r != 0 && ((r < 0) != (y < 0))) return T(r + y);
    }
    return r;
  }
};

template <typename T>
struct MaxFn {
  T operator()(T x, T y) const { return x < y ? y : x; }
};
template <typename T>
struct MinFn {
  T operator()(T x, T y) const { return y < x ? y : x; }
};

// One contiguous inner run; stride 0 means that operand is a repeated scalar.
template <typename T, typename Fn>
void InnerRun(const T* a, int64_t sa, const T* b, int64_t sb, T* out,
              int64_t n) {
  Fn fn;
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b[i]);
  } else if (sa == 1) {
    const T y = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], y);
  } else if (sb == 1) {
    const T x = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = fn(x, b[i]);
  } else {
    const T r = fn(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = r;
  }
}

// Small dim lists live on the stack, so a run allocates nothing.
using Dims = absl::InlinedVector<int64_t, 8>;

// Operand dims right-aligned to `rank`, padded with leading 1s.
Dims Align(const std::vector<int64_t>& dims, size_t rank) {
  Dims out(rank - dims.size(), 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

// Element strides of `dims`, with 0 for broadcast (size-1) dimensions.
Dims BroadcastStrides(const Dims& dims) {
  Dims strides(dims.size(), 0);
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  return strides;
}

// A broadcast collapsed to [outer rows] x [inner run]: the innermost output
// dimensions over which both operands have a fixed stride (0 or 1) are merged.
struct Layout {
  Dims out_dims, a_strides, b_strides;  // outer dims only
  int64_t inner = 1;
  int64_t inner_sa = 1, inner_sb = 1;
};

Layout MakeLayout(const std::vector<int64_t>& a_dims,
                  const std::vector<int64_t>& b_dims, const Dims& out_dims) {
  const size_t rank = out_dims.size();
  Dims a = Align(a_dims, rank), b = Align(b_dims, rank);
  Dims sa = BroadcastStrides(a), sb = BroadcastStrides(b);
  Layout layout;
  size_t d = rank;
  if (d > 0) {
    layout.inner_sa = a[d - 1] == 1 ? 0 : 1;
    layout.inner_sb = b[d - 1] == 1 ? 0 : 1;
  }
  // Merge trailing dims while each operand keeps the same broadcast-ness.
  while (d > 0 && (a[d - 1] == 1 ? 0 : 1) == layout.inner_sa &&
         (b[d - 1] == 1 ? 0 : 1) == layout.inner_sb) {
    layout.inner *= out_dims[d - 1];
    --d;
  }
  layout.out_dims.assign(out_dims.begin(), out_dims.begin() + d);
  layout.a_strides.assign(sa.begin(), sa.begin() + d);
  layout.b_strides.assign(sb.begin(), sb.begin() + d);
  return layout;
}

template <typename T, typename Fn>
void RunLayout(const Layout& l, const T* a, const T* b, T* out) {
  int64_t rows = 1;
  for (int64_t d : l.out_dims) rows *= d;
  const int64_t outer_rank = static_cast<int64_t>(l.out_dims.size());
#pragma omp parallel for if (rows * l.inner >= kParallelElements && rows > 1)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t a_off = 0, b_off = 0, rem = row;
    for (int64_t d = outer_rank - 1; d >= 0; --d) {
      const int64_t idx = rem % l.out_dims[d];
      rem /= l.out_dims[d];
      a_off += idx * l.a_strides[d];
      b_off += idx * l.b_strides[d];
    }
    InnerRun<T, Fn>(a + a_off, l.inner_sa, b + b_off, l.inner_sb,
                    out + row * l.inner, l.inner);
  }
}

}  // namespace

std::optional<std::vector<int64_t>> BroadcastShapes(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  const Dims pa = Align(a, rank), pb = Align(b, rank);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (pa[i] == pb[i] || pb[i] == 1) {
      out[i] = pa[i];
    } else if (pa[i] == 1) {
      out[i] = pb[i];
    } else {
      return std::nullopt;
    }
  }
  return out;
}

template <typename T>
void BroadcastBinary(BinaryOp op, const T* a,
                     const std::vector<int64_t>& a_dims, const T* b,
                     const std::vector<int64_t>& b_dims, T* out) {
  // The broadcast shape (the caller checked the operands broadcast).
  const size_t rank = std::max(a_dims.size(), b_dims.size());
  const Dims pa = Align(a_dims, rank), pb = Align(b_dims, rank);
  Dims out_dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = pa[i] == 1 ? pb[i] : pa[i];
    if (out_dims[i] == 0) return;
  }
  const Layout layout = MakeLayout(a_dims, b_dims, out_dims);
  switch (op) {
    case BinaryOp::kAdd:
      return RunLayout<T, AddFn<T>>(layout, a, b, out);
    case BinaryOp::kSub:
      return RunLayout<T, SubFn<T>>(layout, a, b, out);
    case BinaryOp::kMul:
      return RunLayout<T, MulFn<T>>(layout, a, b, out);
    case BinaryOp::kDiv:
      return RunLayout<T, DivFn<T>>(layout, a, b, out);
    case BinaryOp::kMod:
      return RunLayout<T, ModFn<T>>(layout, a, b, out);
    case BinaryOp::kFmod:
      return RunLayout<T, FmodFn<T>>(layout, a, b, out);
    case BinaryOp::kMax:
      return RunLayout<T, MaxFn<T>>(layout, a, b, out);
    case BinaryOp::kMin:
      return RunLayout<T, MinFn<T>>(layout, a, b, out);
  }
}

template <typename T>
void UnaryArithmetic(UnaryArithmeticOp op, const T* in, int64_t count, T* out) {
  for (int64_t i = 0; i < count; ++i) {
    const T x = in[i];
    switch (op) {
      case UnaryArithmeticOp::kSign:
        out[i] = x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;  // NaN stays
        break;
      case UnaryArithmeticOp::kAbs:
        out[i] = x < 0 ? SubFn<T>()(T(0), x) : x;
        break;
      case UnaryArithmeticOp::kNeg:
        out[i] = SubFn<T>()(T(0), x);
        break;
    }
  }
}

#define COALESCE_INSTANTIATE(T)                                           \
  template void BroadcastBinary<T>(BinaryOp, const T*,                    \
                                   const std::vector<int64_t>&, const T*, \
                                   const std::vector<int64_t>&, T*);      \
  template void UnaryArithmetic<T>(UnaryArithmeticOp, const T*, int64_t, T*);
COALESCE_INSTANTIATE(float)
COALESCE_INSTANTIATE(double)
COALESCE_INSTANTIATE(int64_t)
COALESCE_INSTANTIATE(int32_t)
COALESCE_INSTANTIATE(int16_t)
COALESCE_INSTANTIATE(int8_t)
COALESCE_INSTANTIATE(uint64_t)
COALESCE_INSTANTIATE(uint32_t)
COALESCE_INSTANTIATE(uint16_t)
COALESCE_INSTANTIATE(uint8_t)
#undef COALESCE_INSTANTIATE

}  // namespace coalesce::kernels
