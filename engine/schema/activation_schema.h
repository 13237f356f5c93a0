// The activation the graph optimizer fuses into FusedConv, FusedGemm and
// FusedMatMul (and a channels-last BatchNormalization): its attributes
// "activation" (Relu, LeakyRelu, Clip, Sigmoid, Tanh, Silu, HardSwish,
// HardSigmoid, Gelu, GeluTanh; absent for none), "activation_alpha"
// (LeakyRelu's slope, Clip's min, HardSigmoid's alpha, Silu's sigmoid scale:
// 1 when absent) and "activation_beta"
// (Clip's max, HardSigmoid's beta), resolved once for the CPU kernels and the
// device lowering.
#ifndef COALESCE_ENGINE_SCHEMA_ACTIVATION_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_ACTIVATION_SCHEMA_H_

#include "absl/status/statusor.h"
#include "engine/neutral_plan.h"

namespace coalesce {

struct FusedActivationAttr {
  enum class Kind {
    kNone,
    kRelu,
    kLeakyRelu,
    kClip,
    kSigmoid,
    kTanh,
    // x * sigmoid(alpha x): the optimizer's Mul(x, Sigmoid(x)) (alpha 1,
    // SiLU) and Mul(x, Sigmoid(Mul(x, c))) (alpha c: CLIP's quick GELU, c
    // = 1.702)
    kSilu,
    kHardSwish,
    kHardSigmoid,  // alpha, beta as ONNX's HardSigmoid
    kGeluErf,      // "Gelu": 0.5 x (1 + erf(x / sqrt 2))
    kGeluTanh,     // "GeluTanh": Gelu's approximate="tanh"
  };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// InvalidArgument for an unknown activation or a mistyped attribute.
absl::StatusOr<FusedActivationAttr> ResolveFusedActivation(
    const NodeAttributes& attributes);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_ACTIVATION_SCHEMA_H_
