// Gemm, FusedGemm, MatMul and FusedMatMul.
//   Gemm: Y = alpha * op(A) * op(B) + beta * C, C unidirectionally broadcast
//   to [M, N] (optional from opset 11). FusedGemm (internal domain) adds the
//   optimizer's activation.
//   MatMul: NumPy matrix product; FusedMatMul (internal domain) adds a bias
//   [N] (optional third input) and an activation. Its inference is still the
//   CPU kernel's (engine/ops/matmul.cc: batch broadcasting).
#ifndef COALESCE_ENGINE_SCHEMA_GEMM_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_GEMM_SCHEMA_H_

#include <cstdint>
#include <utility>

#include "engine/schema/activation_schema.h"
#include "engine/shape.h"

namespace coalesce {

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  FusedActivationAttr activation;
};

struct MatMulAttrs {
  FusedActivationAttr activation;
};

// Gemm's C as [rows, cols]: a scalar is 1x1, a vector 1xN.
inline std::pair<int64_t, int64_t> GemmBiasDims(const Shape& c) {
  if (c.empty()) return {1, 1};
  if (c.size() == 1) return {1, c[0]};
  return {c[0], c[1]};
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_GEMM_SCHEMA_H_
