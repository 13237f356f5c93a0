// Broadcasting float math beyond elementwise.h's arithmetic: Pow, Max, Min,
// PRelu and the accumulation steps of the variadic Sum/Max/Min/Mean, with
// multidirectional (NumPy-style) broadcasting. Shapes are checked by
// BroadcastShapes (elementwise.h). Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_BROADCAST_MATH_H_
#define COALESCE_KERNELS_CPU_BROADCAST_MATH_H_

#include <cstdint>
#include <vector>

namespace coalesce::kernels {

enum class MathBinaryOp {
  kAdd,
  kMax,    // NaN if either operand is NaN
  kMin,    // NaN if either operand is NaN
  kPow,    // std::pow(a, b)
  kPRelu,  // a < 0 ? a * b : a
};

// out[i] = a[i'] op b[i''] over the broadcast of a_dims and b_dims.
// REQUIRES: BroadcastShapes(a_dims, b_dims) is engaged; `out` holds its
// element count. `out` may alias `a` when a_dims equals the output's shape.
void BroadcastMath(MathBinaryOp op, const float* a,
                   const std::vector<int64_t>& a_dims, const float* b,
                   const std::vector<int64_t>& b_dims, float* out);

// Writes `in` broadcast to out_dims.
// REQUIRES: BroadcastShapes(in_dims, out_dims) equals out_dims.
void BroadcastTo(const float* in, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& out_dims, float* out);

// out[i] *= scale.
void Scale(float* data, int64_t n, float scale);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_BROADCAST_MATH_H_
