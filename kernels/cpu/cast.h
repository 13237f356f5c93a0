// Cast between the numeric element types (every Triton numeric type). Stateless
// and thread-safe.
#ifndef COALESCE_KERNELS_CPU_CAST_H_
#define COALESCE_KERNELS_CPU_CAST_H_

#include <cstddef>
#include <cstdint>

namespace coalesce::kernels {

// Element types Cast converts between. kFloat16 and kBFloat16 are the bit
// patterns of kernels/cpu/half.h; kBool is one byte.
enum class CastType {
  kFloat32,
  kInt64,
  kInt32,
  kBool,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kUint32,
  kUint64,
  kFloat64,
  kFloat16,
  kBFloat16,
};

// Bytes of one element of `type`.
size_t CastTypeByteSize(CastType type);

// dst[i] = src[i] converted:
//   - to bool: "!= 0" (NaN is true); from bool: any nonzero byte is 1;
//   - float to integer: truncates toward zero; NaN gives 0 and values beyond
//     the target's range saturate to its minimum or maximum (ONNX leaves
//     both undefined);
//   - integer to integer: modulo 2^bits (two's complement), as C++20 does;
//   - to float16/bfloat16: through float, rounded to nearest even; from
//     float16/bfloat16: exact through float (a double becomes a float first);
//   - same type: a copy (bools normalized to 0/1).
// `dst` may equal `src` only when the types match.
void Cast(CastType from, const void* src, CastType to, int64_t count,
          void* dst);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_CAST_H_
