// Elementwise binary arithmetic (Add, Sub, Mul, Div) on float tensors with
// multidirectional (NumPy-style) broadcasting. Stateless and thread-safe.
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
// REQUIRES: BroadcastShapes(a_dims, b_dims) is engaged; `out` holds its
// element count. `out` may alias an input whose shape equals the output's.
void BroadcastBinary(BinaryOp op, const float* a,
                     const std::vector<int64_t>& a_dims, const float* b,
                     const std::vector<int64_t>& b_dims, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ELEMENTWISE_H_
