#include "engine/schema/activation_schema.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {

absl::StatusOr<FusedActivationAttr> ResolveFusedActivation(
    const NodeAttributes& attributes) {
  using Kind = FusedActivationAttr::Kind;
  absl::StatusOr<std::string> name = attributes.GetString("activation", "");
  absl::StatusOr<float> alpha = attributes.GetFloat("activation_alpha", 0.0f);
  absl::StatusOr<float> beta = attributes.GetFloat("activation_beta", 0.0f);
  for (const absl::Status& s : {name.status(), alpha.status(), beta.status()})
    if (!s.ok()) return s;
  FusedActivationAttr act{Kind::kNone, *alpha, *beta};
  if (name->empty()) return act;
  static constexpr std::pair<const char*, Kind> kKinds[] = {
      {"Relu", Kind::kRelu},           {"LeakyRelu", Kind::kLeakyRelu},
      {"Clip", Kind::kClip},           {"Sigmoid", Kind::kSigmoid},
      {"Tanh", Kind::kTanh},           {"Silu", Kind::kSilu},
      {"HardSwish", Kind::kHardSwish}, {"HardSigmoid", Kind::kHardSigmoid},
      {"Gelu", Kind::kGeluErf},        {"GeluTanh", Kind::kGeluTanh}};
  for (const auto& [kind_name, kind] : kKinds) {
    if (*name != kind_name) continue;
    act.kind = kind;
    if (kind == Kind::kSilu) {  // the sigmoid's scale, 1 when absent
      absl::StatusOr<float> scale =
          attributes.GetFloat("activation_alpha", 1.0f);
      if (!scale.ok()) return scale.status();
      act.alpha = *scale;
    }
    return act;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fused activation '", *name, "'"));
}

}  // namespace coalesce
