#include "engine/ops/fused_activation_attr.h"

namespace coalesce {

kernels::FusedActivation ToKernelActivation(const FusedActivationAttr& attr) {
  using Kind = kernels::FusedActivation::Kind;
  using From = FusedActivationAttr::Kind;
  Kind kind = Kind::kNone;
  switch (attr.kind) {
    case From::kNone:
      kind = Kind::kNone;
      break;
    case From::kRelu:
      kind = Kind::kRelu;
      break;
    case From::kLeakyRelu:
      kind = Kind::kLeakyRelu;
      break;
    case From::kClip:
      kind = Kind::kClip;
      break;
    case From::kSigmoid:
      kind = Kind::kSigmoid;
      break;
    case From::kTanh:
      kind = Kind::kTanh;
      break;
    case From::kSilu:
      kind = Kind::kSilu;
      break;
    case From::kHardSwish:
      kind = Kind::kHardSwish;
      break;
    case From::kHardSigmoid:
      kind = Kind::kHardSigmoid;
      break;
    case From::kGeluErf:
      kind = Kind::kGeluErf;
      break;
    case From::kGeluTanh:
      kind = Kind::kGeluTanh;
      break;
  }
  return kernels::FusedActivation{kind, attr.alpha, attr.beta};
}

}  // namespace coalesce
