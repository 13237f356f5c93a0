#include "engine/schema/elementwise_schema.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

absl::StatusOr<FloatClassAttrs> ResolveIsInf(const SchemaNode& node) {
  absl::StatusOr<int64_t> positive =
      node.attributes.GetInt("detect_positive", 1);
  if (!positive.ok()) return positive.status();
  absl::StatusOr<int64_t> negative =
      node.attributes.GetInt("detect_negative", 1);
  if (!negative.ok()) return negative.status();
  return FloatClassAttrs{false, *positive != 0, *negative != 0};
}

bool IsFloatType(DataType t) {
  return t == DataType::kFp32 || t == DataType::kFp64 || t == DataType::kFp16 ||
         t == DataType::kBf16;
}

absl::Status InferFloatClass(const FloatClassAttrs&,
                             absl::Span<const TensorInfo> in,
                             absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("needs one input");
  if (!IsFloatType(in[0].dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 0 has type ", std::string(DataTypeName(in[0].dtype)),
        " (FP32, FP64, FP16 and BF16 are supported)"));
  }
  out[0] = {DataType::kBool, in[0].shape, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<ModAttrs> ResolveMod(const SchemaNode& node) {
  absl::StatusOr<int64_t> fmod = node.attributes.GetInt("fmod", 0);
  if (!fmod.ok()) return fmod.status();
  if (*fmod != 0 && *fmod != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'fmod' must be 0 or 1, got ", *fmod));
  }
  return ModAttrs{*fmod == 1};
}

}  // namespace

void RegisterElementwiseSchemas(SchemaRegistry& registry) {
  registry.Register(
      "IsNaN", std::make_shared<FunctionSchema<FloatClassAttrs>>(
                   [](const SchemaNode&) -> absl::StatusOr<FloatClassAttrs> {
                     return FloatClassAttrs{true, false, false};
                   },
                   &InferFloatClass));
  registry.Register("IsInf", std::make_shared<FunctionSchema<FloatClassAttrs>>(
                                 &ResolveIsInf, &InferFloatClass));
  registry.Register(
      "Mod", std::make_shared<FunctionSchema<ModAttrs>>(&ResolveMod, nullptr));
}

}  // namespace coalesce
