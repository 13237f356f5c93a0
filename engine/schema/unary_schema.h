// Float elementwise math whose meaning lives here (engine/schema/
// op_schema.h): FP32 in, FP32 out of the input's shape. The operators and
// the attributes each reads (defaults as ONNX):
//   Relu, Sigmoid, Tanh, Sqrt, Exp, Log, Reciprocal, Erf, Softplus,
//   Softsign, Floor, Ceil, Round (ties to even), Sin, Cos, HardSwish, Mish;
//   LeakyRelu (alpha 0.01), Elu (alpha 1), Selu (alpha, gamma),
//   HardSigmoid (alpha 0.2, beta 0.5), Celu (alpha 1), ThresholdedRelu
//   (alpha 1);
//   Gelu (opset 20, `approximate` "none" or "tanh"; the internal-domain Gelu
//   the optimizer fuses exists at any opset);
//   Clip: `min`/`max` attributes before opset 11 (defaults: the float
//   range), optional scalar FP32 inputs 1 and 2 since.
// (Neg and Abs take every arithmetic type: the CPU's binary.cc.)
#ifndef COALESCE_ENGINE_SCHEMA_UNARY_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_UNARY_SCHEMA_H_

namespace coalesce {

enum class UnaryKind {
  kRelu,
  kSigmoid,
  kTanh,
  kSqrt,
  kExp,
  kLog,
  kReciprocal,
  kErf,
  kSoftplus,
  kSoftsign,
  kLeakyRelu,
  kElu,
  kSelu,
  kHardSigmoid,
  kGeluErf,
  kGeluTanh,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kHardSwish,
  kMish,
  kCelu,
  kThresholdedRelu,
  kClip,
};

struct UnaryAttrs {
  UnaryKind kind = UnaryKind::kRelu;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  // Clip: [alpha, beta] from the attributes (opset < 11), or from inputs 1
  // and 2 when they are given (opset >= 11; absent: unbounded).
  bool bounds_from_inputs = false;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_UNARY_SCHEMA_H_
