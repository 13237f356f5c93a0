#include "engine/schema/normalization_schema.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

// True when `param` is one element or, without leading 1s, equals `norm`.
bool FitsNormalizedShape(const Shape& param, const Shape& norm) {
  if (DimProduct(param, 0, param.size()) == 1) return true;
  size_t lead = 0;
  while (lead < param.size() && param.size() - lead > norm.size() &&
         param[lead] == 1) {
    ++lead;
  }
  return Shape(param.begin() + lead, param.end()) == norm;
}

absl::StatusOr<LayerNormAttrs> Resolve(const SchemaNode& node) {
  for (size_t i = 1; i < node.outputs_used.size(); ++i) {
    if (node.outputs_used[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " (", i == 1 ? "Mean" : "InvStdDev",
                       ") is not supported; only Y (output 0) is implemented"));
    }
  }
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", -1);
  if (!axis.ok()) return axis.status();
  absl::StatusOr<float> epsilon = node.attributes.GetFloat("epsilon", 1e-5f);
  if (!epsilon.ok()) return epsilon.status();
  return LayerNormAttrs{*axis, *epsilon};
}

absl::Status Infer(const LayerNormAttrs& attrs, absl::Span<const TensorInfo> in,
                   absl::Span<TensorInfo> out) {
  for (int i : {0, 1}) {
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
  }
  const bool has_bias = in.size() > 2 && in[2].present();
  if (has_bias) {
    if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
      return s;
  }
  const Shape& x = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, x.size());
  if (!axis.ok()) return axis.status();
  const Shape norm(x.begin() + *axis, x.end());
  for (int i = 1; i <= (has_bias ? 2 : 1); ++i) {
    if (!FitsNormalizedShape(in[i].shape, norm)) {
      return absl::InvalidArgumentError(absl::StrCat(
          i == 1 ? "Scale" : "B", " has shape ", ShapeToString(in[i].shape),
          "; expected the normalized shape ", ShapeToString(norm),
          " or a single element"));
    }
  }
  out[0] = {DataType::kFp32, x, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<GroupNormAttrs> ResolveInstanceNorm(const SchemaNode& node) {
  absl::StatusOr<float> epsilon = node.attributes.GetFloat("epsilon", 1e-5f);
  if (!epsilon.ok()) return epsilon.status();
  return GroupNormAttrs{0, *epsilon, false};
}

absl::StatusOr<GroupNormAttrs> ResolveGroupNorm(const SchemaNode& node) {
  if (!node.attributes.Has("num_groups")) {
    return absl::InvalidArgumentError("attribute 'num_groups' is required");
  }
  absl::StatusOr<int64_t> groups = node.attributes.GetInt("num_groups", 1);
  if (!groups.ok()) return groups.status();
  if (*groups < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_groups must be positive, got ", *groups));
  }
  absl::StatusOr<float> epsilon = node.attributes.GetFloat("epsilon", 1e-5f);
  if (!epsilon.ok()) return epsilon.status();
  return GroupNormAttrs{*groups, *epsilon, node.opset < 21};
}

absl::Status InferGroupNorm(const GroupNormAttrs& attrs,
                            absl::Span<const TensorInfo> in,
                            absl::Span<TensorInfo> out) {
  for (int i : {0, 1, 2}) {
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
  }
  const Shape& x = in[0].shape;
  if (x.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("X ", ShapeToString(x), " needs [N, C, ...]"));
  }
  const int64_t groups = attrs.num_groups == 0 ? x[1] : attrs.num_groups;
  if (groups == 0 || x[1] % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "X has ", x[1], " channels, not a multiple of ", groups, " groups"));
  }
  const int64_t affine = attrs.affine_per_group ? groups : x[1];
  for (int i : {1, 2}) {
    if (in[i].shape != Shape{affine}) {
      return absl::InvalidArgumentError(
          absl::StrCat(i == 1 ? "scale " : "bias ", ShapeToString(in[i].shape),
                       " must be [", affine, "]"));
    }
  }
  out[0] = {DataType::kFp32, x, nullptr};
  return absl::OkStatus();
}

}  // namespace

void RegisterNormalizationSchemas(SchemaRegistry& registry) {
  registry.Register(
      "LayerNormalization",
      std::make_shared<FunctionSchema<LayerNormAttrs>>(&Resolve, &Infer));
  registry.Register("InstanceNormalization",
                    std::make_shared<FunctionSchema<GroupNormAttrs>>(
                        &ResolveInstanceNorm, &InferGroupNorm));
  registry.Register("GroupNormalization",
                    std::make_shared<FunctionSchema<GroupNormAttrs>>(
                        &ResolveGroupNorm, &InferGroupNorm));
}

}  // namespace coalesce
