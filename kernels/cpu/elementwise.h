// Elementwise binary arithmetic (Add, Sub, Mul, Div, Mod) with
// multidirectional (NumPy-style) broadcasting, on float, double and 8- to
// 64-bit signed and unsigned integer tensors, and Sign. Stateless and
// thread-safe.
//
// Integers: Add, Sub and Mul wrap around on overflow (modulo 2^bits, as
// onnxruntime computes in the type); Div truncates toward zero, as C does.
// Where C leaves integer division undefined (a divisor of 0, or a signed
// type's minimum divided by -1, both of which trap on x86) the result is
// defined here: x / 0 is 0, and MIN / -1 is MIN. A request's data must not be
// able to crash the server.
//
// Mod (ONNX Mod with fmod = 0) is the floored remainder, with the sign of the
// divisor (Python's %, numpy.mod); Fmod (fmod = 1) the truncated one, with
// the sign of the dividend (C's % and fmod). An integer remainder by 0 is 0
// (as Div's quotient); by -1 it is 0 (the C expression MIN % -1 traps). A
// float remainder by 0 is NaN.
#ifndef COALESCE_KERNELS_CPU_ELEMENTWISE_H_
#define COALESCE_KERNELS_CPU_ELEMENTWISE_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace coalesce::kernels {

// kMax and kMin are for integers: floats go through broadcast_math.h, which
// propagates NaN.
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMod, kFmod, kMax, kMin };

// The NumPy broadcast of two shapes, or nullopt when they are incompatible.
std::optional<std::vector<int64_t>> BroadcastShapes(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// out[i] = a[i'] op b[i''] over the broadcast of a_dims and b_dims.
// Defined for T = float, double, int8_t, int16_t, int32_t, int64_t, uint8_t,
// uint16_t, uint32_t and uint64_t.
// REQUIRES: BroadcastShapes(a_dims, b_dims) is engaged; `out` holds its
// element count. `out` may alias an input whose shape equals the output's.
template <typename T>
void BroadcastBinary(BinaryOp op, const T* a,
                     const std::vector<int64_t>& a_dims, const T* b,
                     const std::vector<int64_t>& b_dims, T* out);

// Unary arithmetic for every type BroadcastBinary takes:
// kSign: -1, 0 or 1 as in[i] is negative, zero (-0 included: +0, as
//   onnxruntime gives) or positive; NaN stays NaN;
// kAbs, kNeg: |x| and -x; integers wrap (|MIN| and -MIN are MIN), unsigned
//   Abs is the identity and unsigned Neg wraps modulo 2^bits.
enum class UnaryArithmeticOp { kSign, kAbs, kNeg };
template <typename T>
void UnaryArithmetic(UnaryArithmeticOp op, const T* in, int64_t count, T* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ELEMENTWISE_H_
