// The per-element math of the typed elementwise kernels (typed.cu): integer
// and boolean arithmetic, comparisons, logic, Where and Cast over float32,
// int64, int32, uint8 and bool tensors, with NumPy broadcasting of up to
// three inputs. These are the operators exporters emit for attention masks
// and position ids. Host and device (host_device.h); unit-tested on the host
// (cuda_math_test.cc).
//
// Semantics match the CPU engine's (kernels/cpu/elementwise.h and cast.h),
// so a model computes the same masks on every executor:
//   - integer Add, Sub and Mul wrap around; Div truncates; x / 0 is 0 and
//     MIN / -1 is MIN; Mod is floored (sign of the divisor), Fmod truncated;
//     an integer remainder by 0 or -1 is 0, a float one by 0 is NaN;
//   - float Max and Min propagate NaN;
//   - Cast to bool is "!= 0" (NaN is true); float to integer truncates,
//     NaN gives 0 and values beyond the range saturate; integer to integer
//     wraps.
#ifndef COALESCE_KERNELS_CUDA_TYPED_MATH_H_
#define COALESCE_KERNELS_CUDA_TYPED_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// Element types of the typed kernels. kBool is one byte, 0 or 1.
enum class ElementType { kFloat, kInt64, kInt32, kUint8, kBool };

enum class TypedOp {
  // y has the operands' type (float, int64 or int32).
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,   // floored remainder (ONNX Mod, fmod = 0)
  kFmod,  // truncated remainder (fmod = 1)
  kMax,
  kMin,
  kNeg,  // unary
  kAbs,  // unary
  // y is bool; comparisons take float, int64 or int32, logic bool.
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
  kNot,       // unary, bool
  kIsNaN,     // unary, float
  kIsInf,     // unary, float: either sign
  kIsPosInf,  // unary, float
  kIsNegInf,  // unary, float
};

// True for the ops whose result is bool.
COALESCE_HD bool IsPredicate(TypedOp op) { return op >= TypedOp::kEqual; }

// True for the ops that read one input.
COALESCE_HD bool IsUnaryTyped(TypedOp op) {
  return op == TypedOp::kNeg || op == TypedOp::kAbs || op == TypedOp::kNot ||
         op == TypedOp::kIsNaN || op == TypedOp::kIsInf ||
         op == TypedOp::kIsPosInf || op == TypedOp::kIsNegInf;
}

template <typename T>
struct Unsigned;
template <>
struct Unsigned<int64_t> {
  using type = uint64_t;
};
template <>
struct Unsigned<int32_t> {
  using type = uint32_t;
};

template <typename T>
COALESCE_HD T MinOf() {
  return static_cast<T>(typename Unsigned<T>::type{1} << (sizeof(T) * 8 - 1));
}

// Integer arithmetic (T = int64_t or int32_t), defined for every input.
template <typename T>
COALESCE_HD T IntArithmetic(TypedOp op, T a, T b) {
  using U = typename Unsigned<T>::type;
  switch (op) {
    case TypedOp::kAdd:
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case TypedOp::kSub:
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    case TypedOp::kMul:
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case TypedOp::kDiv:
      if (b == 0) return 0;
      if (b == -1) return a == MinOf<T>() ? a : -a;
      return a / b;
    case TypedOp::kMod:
    case TypedOp::kFmod: {
      if (b == 0 || b == -1) return 0;
      const T r = a % b;
      if (op == TypedOp::kMod && r != 0 && ((r < 0) != (b < 0))) return r + b;
      return r;
    }
    case TypedOp::kMax:
      return a > b ? a : b;
    case TypedOp::kMin:
      return a < b ? a : b;
    case TypedOp::kNeg:
      return static_cast<T>(U{0} - static_cast<U>(a));
    case TypedOp::kAbs:
      return a < 0 ? static_cast<T>(U{0} - static_cast<U>(a)) : a;
    default:
      break;
  }
  return a;
}

COALESCE_HD float FloatArithmetic(TypedOp op, float a, float b) {
  switch (op) {
    case TypedOp::kAdd:
      return a + b;
    case TypedOp::kSub:
      return a - b;
    case TypedOp::kMul:
      return a * b;
    case TypedOp::kDiv:
      return a / b;
    case TypedOp::kMod: {
      const float r = fmodf(a, b);
      return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
    }
    case TypedOp::kFmod:
      return fmodf(a, b);
    case TypedOp::kMax:
      return a != a || b != b ? a + b : (a > b ? a : b);
    case TypedOp::kMin:
      return a != a || b != b ? a + b : (a < b ? a : b);
    case TypedOp::kNeg:
      return -a;
    case TypedOp::kAbs:
      return fabsf(a);
    default:
      break;
  }
  return a;
}

template <typename T>
COALESCE_HD T Arithmetic(TypedOp op, T a, T b) {
  return IntArithmetic(op, a, b);
}
template <>
COALESCE_HD float Arithmetic<float>(TypedOp op, float a, float b) {
  return FloatArithmetic(op, a, b);
}
// Bytes take predicates only (the lowering offers no byte arithmetic).
template <>
COALESCE_HD uint8_t Arithmetic<uint8_t>(TypedOp, uint8_t a, uint8_t) {
  return a;
}

// A predicate of a and b (b is ignored by unary ops). For logic ops T is
// uint8_t and any nonzero byte is true.
template <typename T>
COALESCE_HD bool Predicate(TypedOp op, T a, T b) {
  switch (op) {
    case TypedOp::kEqual:
      return a == b;
    case TypedOp::kLess:
      return a < b;
    case TypedOp::kLessOrEqual:
      return a <= b;
    case TypedOp::kGreater:
      return a > b;
    case TypedOp::kGreaterOrEqual:
      return a >= b;
    case TypedOp::kAnd:
      return a != 0 && b != 0;
    case TypedOp::kOr:
      return a != 0 || b != 0;
    case TypedOp::kXor:
      return (a != 0) != (b != 0);
    case TypedOp::kNot:
      return a == 0;
    case TypedOp::kIsNaN:
      return a != a;
    case TypedOp::kIsInf:
      return a - a != a - a && a == a;  // infinite: inf - inf is NaN
    case TypedOp::kIsPosInf:
      return a - a != a - a && a > 0;
    case TypedOp::kIsNegInf:
      return a - a != a - a && a < 0;
    default:
      break;
  }
  return false;
}

// Element `i` of `x` (of type `type`) as To, by Cast's rules.
template <typename To>
COALESCE_HD To ConvertInteger(int64_t v) {
  return static_cast<To>(v);  // wraps (two's complement)
}

template <typename To>
COALESCE_HD To ConvertFloat(float v) {
  if (v != v) return To{0};
  const float lo = static_cast<float>(MinOf<To>());
  if (v <= lo) return MinOf<To>();
  // -lo is 2^(bits-1), exactly representable: values at or above saturate.
  if (v >= -lo)
    return static_cast<To>(
        ~static_cast<typename Unsigned<To>::type>(MinOf<To>()));
  return static_cast<To>(v);
}

template <typename To>
COALESCE_HD To ReadConverted(const void* x, int64_t i, ElementType type);

template <>
COALESCE_HD float ReadConverted<float>(const void* x, int64_t i,
                                       ElementType type) {
  switch (type) {
    case ElementType::kInt64:
      return static_cast<float>(static_cast<const int64_t*>(x)[i]);
    case ElementType::kInt32:
      return static_cast<float>(static_cast<const int32_t*>(x)[i]);
    case ElementType::kUint8:
      return static_cast<float>(static_cast<const uint8_t*>(x)[i]);
    case ElementType::kBool:
      return static_cast<const uint8_t*>(x)[i] != 0 ? 1.0f : 0.0f;
    case ElementType::kFloat:
      break;
  }
  return static_cast<const float*>(x)[i];
}

// Integer targets (int64_t, int32_t).
template <typename To>
COALESCE_HD To ReadConvertedInteger(const void* x, int64_t i,
                                    ElementType type) {
  switch (type) {
    case ElementType::kInt64:
      return ConvertInteger<To>(static_cast<const int64_t*>(x)[i]);
    case ElementType::kInt32:
      return ConvertInteger<To>(static_cast<const int32_t*>(x)[i]);
    case ElementType::kUint8:
      return static_cast<To>(static_cast<const uint8_t*>(x)[i]);
    case ElementType::kBool:
      return static_cast<const uint8_t*>(x)[i] != 0 ? To{1} : To{0};
    case ElementType::kFloat:
      break;
  }
  return ConvertFloat<To>(static_cast<const float*>(x)[i]);
}

template <>
COALESCE_HD int64_t ReadConverted<int64_t>(const void* x, int64_t i,
                                           ElementType type) {
  return ReadConvertedInteger<int64_t>(x, i, type);
}
template <>
COALESCE_HD int32_t ReadConverted<int32_t>(const void* x, int64_t i,
                                           ElementType type) {
  return ReadConvertedInteger<int32_t>(x, i, type);
}

// To uint8: integers wrap, bools give 0 or 1; floats truncate and saturate
// to [0, 255]. To bool (as uint8 0/1): "!= 0", NaN is true.
COALESCE_HD uint8_t ReadAsByte(const void* x, int64_t i, ElementType type,
                               bool to_bool) {
  if (type == ElementType::kFloat) {
    const float v = static_cast<const float*>(x)[i];
    if (to_bool) return v != 0.0f;
    if (v != v || v <= 0.0f) return 0;
    return v >= 255.0f ? 255 : static_cast<uint8_t>(v);
  }
  const int64_t v =
      type == ElementType::kInt64   ? static_cast<const int64_t*>(x)[i]
      : type == ElementType::kInt32 ? static_cast<const int32_t*>(x)[i]
                                    : static_cast<const uint8_t*>(x)[i];
  // A bool's byte reads as 0 or 1 (any nonzero byte is true).
  if (to_bool || type == ElementType::kBool) return v != 0;
  return static_cast<uint8_t>(v);
}

inline constexpr int kMaxTypedRank = 8;
inline constexpr int kMaxTypedInputs = 3;

// Maps an output element to the elements of up to three inputs broadcast
// to the output's shape. Built on the host by MakeTypedIndexer, which
// drops the output's dims of 1 and merges neighbouring dims that every
// input walks contiguously (or broadcasts over both), so a mask's
// [B, 1, S, S] is indexed in as few dims as its inputs allow.
struct TypedIndexer {
  int rank = 0;
  int inputs = 0;
  // Every output index fits in 32 bits: TypedOffsets divides in 32 bits
  // (a 64-bit division is tens of instructions on a GPU).
  bool index32 = false;
  int64_t out_dims[kMaxTypedRank] = {};
  int64_t strides[kMaxTypedInputs][kMaxTypedRank] = {};  // 0: broadcast
};

// Offsets of output element `index` in each input. The loops run over the
// constant bounds, so that on a GPU the indexer stays in registers and
// parameter space (a loop bounded by ix.rank would copy it to local
// memory); the dims past ix.rank and the inputs past ix.inputs have
// strides 0.
COALESCE_HD void TypedOffsets(const TypedIndexer& ix, int64_t index,
                              int64_t offsets[kMaxTypedInputs]) {
  for (int k = 0; k < kMaxTypedInputs; ++k) offsets[k] = 0;
  if (ix.index32) {
    uint32_t rest = static_cast<uint32_t>(index);
    COALESCE_UNROLL
    for (int d = kMaxTypedRank - 1; d >= 0; --d) {
      if (d >= ix.rank) continue;
      const uint32_t extent = static_cast<uint32_t>(ix.out_dims[d]);
      const int64_t coord = rest % extent;
      rest /= extent;
      COALESCE_UNROLL
      for (int k = 0; k < kMaxTypedInputs; ++k)
        offsets[k] += coord * ix.strides[k][d];
    }
    return;
  }
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t coord = index % ix.out_dims[d];
    index /= ix.out_dims[d];
    for (int k = 0; k < ix.inputs; ++k) offsets[k] += coord * ix.strides[k][d];
  }
}

// Drops `ix`'s dims of 1 and merges dim d into d + 1 where every input's
// stride at d is its stride at d + 1 times dim d + 1's extent (contiguous,
// or 0 at both): the offsets TypedOffsets computes stay the same.
inline void CompactTypedIndexer(TypedIndexer* ix) {
  TypedIndexer out = *ix;
  out.rank = 0;
  for (int d = 0; d < ix->rank; ++d) {
    if (ix->out_dims[d] == 1) continue;
    const int last = out.rank - 1;
    bool merges = last >= 0;
    for (int k = 0; k < ix->inputs && merges; ++k)
      merges = out.strides[k][last] == ix->strides[k][d] * ix->out_dims[d];
    if (merges) {
      out.out_dims[last] *= ix->out_dims[d];
      for (int k = 0; k < ix->inputs; ++k)
        out.strides[k][last] = ix->strides[k][d];
      continue;
    }
    out.out_dims[out.rank] = ix->out_dims[d];
    for (int k = 0; k < ix->inputs; ++k)
      out.strides[k][out.rank] = ix->strides[k][d];
    ++out.rank;
  }
  for (int d = out.rank; d < kMaxTypedRank; ++d) {
    out.out_dims[d] = 0;
    for (int k = 0; k < kMaxTypedInputs; ++k) out.strides[k][d] = 0;
  }
  *ix = out;
}

// Fills `ix` for `inputs` inputs (dims[k] of rank ranks[k]) broadcast to
// the output `out_dims` of rank `out_rank`; returns the output's element
// count, or -1 when an input does not broadcast to it or a rank is above
// kMaxTypedRank.
inline int64_t MakeTypedIndexer(int inputs, const int64_t* const* dims,
                                const int* ranks, const int64_t* out_dims,
                                int out_rank, TypedIndexer* ix) {
  if (out_rank > kMaxTypedRank || inputs > kMaxTypedInputs) return -1;
  *ix = TypedIndexer{};
  ix->rank = out_rank;
  ix->inputs = inputs;
  int64_t count = 1;
  for (int d = 0; d < out_rank; ++d) {
    ix->out_dims[d] = out_dims[d];
    count *= out_dims[d];
  }
  for (int k = 0; k < inputs; ++k) {
    if (ranks[k] > out_rank) return -1;
    int64_t stride = 1;
    for (int d = out_rank - 1; d >= 0; --d) {
      const int kd = d - (out_rank - ranks[k]);
      const int64_t in = kd >= 0 ? dims[k][kd] : 1;
      if (in != out_dims[d] && in != 1) return -1;
      ix->strides[k][d] = in == 1 ? 0 : stride;
      stride *= in;
    }
  }
  CompactTypedIndexer(ix);
  ix->index32 = count <= int64_t{0xffffffff};
  return count;
}

// `truth`: the operands are bool, read as 0 or 1 whatever their byte (as
// the CPU reads a bool), so Equal(2, 1) is true.
template <typename T>
COALESCE_HD void TypedElementAs(TypedOp op, const TypedIndexer& ix,
                                const void* a, const void* b, void* y,
                                int64_t i, bool truth = false) {
  int64_t at[kMaxTypedInputs];
  TypedOffsets(ix, i, at);
  T x = static_cast<const T*>(a)[at[0]];
  T z = IsUnaryTyped(op) ? x : static_cast<const T*>(b)[at[1]];
  if (truth) {
    x = x != T{0} ? T{1} : T{0};
    z = z != T{0} ? T{1} : T{0};
  }
  if (IsPredicate(op)) {
    static_cast<uint8_t*>(y)[i] = Predicate<T>(op, x, z) ? 1 : 0;
  } else {
    static_cast<T*>(y)[i] = Arithmetic<T>(op, x, z);
  }
}

// Output element `i` of op(a, b) over the broadcast `ix` describes (inputs
// 0 and 1; a unary op reads a only), for operands of `type`: y has that
// type, or is bool for a predicate. Logic ops take kBool (or kUint8)
// operands; arithmetic ops kFloat, kInt64 or kInt32.
COALESCE_HD void TypedElement(TypedOp op, ElementType type,
                              const TypedIndexer& ix, const void* a,
                              const void* b, void* y, int64_t i) {
  switch (type) {
    case ElementType::kInt64:
      return TypedElementAs<int64_t>(op, ix, a, b, y, i);
    case ElementType::kInt32:
      return TypedElementAs<int32_t>(op, ix, a, b, y, i);
    case ElementType::kUint8:
      return TypedElementAs<uint8_t>(op, ix, a, b, y, i);
    case ElementType::kBool:
      return TypedElementAs<uint8_t>(op, ix, a, b, y, i, /*truth=*/true);
    case ElementType::kFloat:
      break;
  }
  TypedElementAs<float>(op, ix, a, b, y, i);
}

// Output element `i` of Where: cond (bool, input 0) ? x (input 1) : z
// (input 2), for elements of T.
template <typename T>
COALESCE_HD void WhereElement(const TypedIndexer& ix, const uint8_t* cond,
                              const T* x, const T* z, T* y, int64_t i) {
  int64_t at[kMaxTypedInputs];
  TypedOffsets(ix, i, at);
  y[i] = cond[at[0]] != 0 ? x[at[1]] : z[at[2]];
}

// Element `i` of Cast from `from` to `to`.
COALESCE_HD void CastElement(ElementType from, const void* x, ElementType to,
                             void* y, int64_t i) {
  switch (to) {
    case ElementType::kFloat:
      static_cast<float*>(y)[i] = ReadConverted<float>(x, i, from);
      return;
    case ElementType::kInt64:
      static_cast<int64_t*>(y)[i] = ReadConverted<int64_t>(x, i, from);
      return;
    case ElementType::kInt32:
      static_cast<int32_t*>(y)[i] = ReadConverted<int32_t>(x, i, from);
      return;
    case ElementType::kUint8:
    case ElementType::kBool:
      static_cast<uint8_t*>(y)[i] =
          ReadAsByte(x, i, from, to == ElementType::kBool);
      return;
  }
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_TYPED_MATH_H_
