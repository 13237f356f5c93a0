// Elementwise binary arithmetic (Add, Sub, Mul, Div) with multidirectional
// (NumPy-style) broadcasting, on float, double and 8- to 64-bit signed and
// unsigned integer tensors. Stateless and thread-safe.
//
// Integers: Add, Sub and Mul wrap around on overflow (modulo 2^bits, as
// onnxruntime computes in the type); Div truncates toward zero, as C does.
// Where C leaves integer division undefined (a divisor of 0, or a signed
// type's minimum divided by -1, both of which trap on x86) the result is
// defined here: x / 0 is 0, and MIN / -1 is MIN. A request's data must not be
// able to crash the server.
#ifndef COALESCE_KERNELS_CPU_ELEMENTWISE_H_
#define COALESCE_KERNELS_CPU_ELEMENTWISE_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace coalesce::kernels {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

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

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ELEMENTWISE_H_
