#include "engine/schema/normalization_schema.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"
#include "engine/schema/window_limits.h"

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

namespace {

absl::StatusOr<BatchNormAttrs> ResolveBatchNorm(const SchemaNode& node) {
  const NodeAttributes& a = node.attributes;
  absl::StatusOr<float> epsilon = a.GetFloat("epsilon", 1e-5f);
  absl::StatusOr<int64_t> training = a.GetInt("training_mode", 0);
  absl::StatusOr<int64_t> spatial = a.GetInt("spatial", 1);
  absl::StatusOr<int64_t> channels_last = a.GetInt("channels_last", 0);
  for (const absl::Status& s : {epsilon.status(), training.status(),
                                spatial.status(), channels_last.status()})
    if (!s.ok()) return s;
  if (*training != 0) {
    return absl::InvalidArgumentError(
        "training_mode = 1 is not supported (inference only)");
  }
  if (*spatial != 1) {
    return absl::InvalidArgumentError(
        "spatial = 0 (per-activation statistics) is not supported");
  }
  if (node.outputs_used.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "only the Y output of inference mode is supported, the node has ",
        node.outputs_used.size(), " outputs"));
  }
  if (*channels_last != 0 && *channels_last != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels_last must be 0 or 1, got ", *channels_last));
  }
  absl::StatusOr<FusedActivationAttr> activation = ResolveFusedActivation(a);
  if (!activation.ok()) return activation.status();
  return BatchNormAttrs{*epsilon, *channels_last == 1, *activation};
}

absl::Status InferBatchNorm(const BatchNormAttrs& attrs,
                            absl::Span<const TensorInfo> in,
                            absl::Span<TensorInfo> out) {
  if (in.size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 5 inputs, got ", in.size()));
  }
  for (int i = 0; i < 5; ++i)
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
  const Shape& x = in[0].shape;
  if (x.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("X ", ShapeToString(x), " must have a channel dim"));
  }
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean",
                                           "input_var"};
  const int64_t channels = attrs.channels_last ? x.back() : x[1];
  for (int i = 1; i < 5; ++i) {
    if (in[i].shape != Shape{channels}) {
      return absl::InvalidArgumentError(
          absl::StrCat(kNames[i], " ", ShapeToString(in[i].shape), " must be [",
                       channels, "] for X ", ShapeToString(x),
                       attrs.channels_last ? " (channels-last)" : ""));
    }
  }
  out[0] = {DataType::kFp32, x, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<LrnAttrs> ResolveLrn(const SchemaNode& node) {
  const NodeAttributes& a = node.attributes;
  if (!a.Has("size"))
    return absl::InvalidArgumentError("LRN needs the size attribute");
  LrnAttrs p;
  absl::StatusOr<int64_t> size = a.GetInt("size", 1);
  absl::StatusOr<float> alpha = a.GetFloat("alpha", p.alpha);
  absl::StatusOr<float> beta = a.GetFloat("beta", p.beta);
  absl::StatusOr<float> bias = a.GetFloat("bias", p.bias);
  if (!size.ok()) return size.status();
  for (const auto* s : {&alpha, &beta, &bias})
    if (!s->ok()) return s->status();
  if (*size < 1 || *size > kMaxWindowAttribute) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size must be in [1, ", kMaxWindowAttribute, "], got ", *size));
  }
  return LrnAttrs{*size, *alpha, *beta, *bias};
}

absl::Status InferLrn(const LrnAttrs&, absl::Span<const TensorInfo> in,
                      absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  if (in[0].shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input of shape ", ShapeToString(in[0].shape), " has no N and C dims"));
  }
  out[0] = {DataType::kFp32, in[0].shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

void RegisterNormalizationSchemas(SchemaRegistry& registry) {
  registry.Register("BatchNormalization",
                    std::make_shared<FunctionSchema<BatchNormAttrs>>(
                        &ResolveBatchNorm, &InferBatchNorm));
  registry.Register("LRN", std::make_shared<FunctionSchema<LrnAttrs>>(
                               &ResolveLrn, &InferLrn));
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
