// Elementwise float math on contiguous arrays: out[i] = f(in[i]) for the ONNX
// unary operators beyond the basic activations (see activation.h). `out` may
// equal `in`. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_UNARY_MATH_H_
#define COALESCE_KERNELS_CPU_UNARY_MATH_H_

#include <cstdint>

namespace coalesce::kernels {

enum class UnaryOp {
  kSqrt,
  kExp,
  kLog,
  kNeg,
  kAbs,
  kReciprocal,
  kErf,
  kSoftplus,     // log(1 + exp(x))
  kSoftsign,     // x / (1 + |x|)
  kLeakyRelu,    // x >= 0 ? x : alpha * x
  kElu,          // x >= 0 ? x : alpha * (exp(x) - 1)
  kSelu,         // gamma * (x > 0 ? x : alpha * (exp(x) - 1))
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kGelu,         // 0.5 * x * (1 + erf(x / sqrt(2)))
  kGeluTanh,     // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  kFloor,
  kCeil,
  kRound,  // to nearest, ties to even
  kSin,
  kCos,
  kHardSwish,        // x * max(0, min(1, x / 6 + 0.5))
  kMish,             // x * tanh(softplus(x))
  kCelu,             // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  kThresholdedRelu,  // x > alpha ? x : 0
};

// The attributes some operators take; others ignore them.
struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
};

void Unary(UnaryOp op, const UnaryParams& params, const float* in, int64_t n,
           float* out);

// out[i] = min(max(in[i], lo), hi). NaN inputs stay NaN.
void Clip(const float* in, int64_t n, float lo, float hi, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_UNARY_MATH_H_
