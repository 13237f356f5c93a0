#include "engine/ops/fused_activation_attr.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coalesce {

absl::StatusOr<kernels::FusedActivation> ParseFusedActivation(
    const OpNode& node) {
  using Kind = kernels::FusedActivation::Kind;
  absl::StatusOr<std::string> name = node.GetString("activation", "");
  absl::StatusOr<float> alpha = node.GetFloat("activation_alpha", 0.0f);
  absl::StatusOr<float> beta = node.GetFloat("activation_beta", 0.0f);
  for (const absl::Status& s : {name.status(), alpha.status(), beta.status()})
    if (!s.ok()) return s;
  kernels::FusedActivation act{Kind::kNone, *alpha, *beta};
  if (name->empty()) return act;
  if (*name == "Relu") {
    act.kind = Kind::kRelu;
  } else if (*name == "LeakyRelu") {
    act.kind = Kind::kLeakyRelu;
  } else if (*name == "Clip") {
    act.kind = Kind::kClip;
  } else if (*name == "Sigmoid") {
    act.kind = Kind::kSigmoid;
  } else if (*name == "Tanh") {
    act.kind = Kind::kTanh;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown fused activation '", *name, "'"));
  }
  return act;
}

}  // namespace coalesce
