#include "engine/schema/unary_schema.h"

#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

// Which float attributes an operator reads, and their defaults; a null
// name is not read.
struct Params {
  const char* alpha = nullptr;
  float alpha_default = 0.0f;
  const char* beta = nullptr;
  float beta_default = 0.0f;
  const char* gamma = nullptr;
  float gamma_default = 0.0f;
};

absl::Status ReadParam(const NodeAttributes& a, const char* name,
                       float fallback, float* value) {
  if (name == nullptr) return absl::OkStatus();
  absl::StatusOr<float> v = a.GetFloat(name, fallback);
  if (!v.ok()) return v.status();
  *value = *v;
  return absl::OkStatus();
}

FunctionSchema<UnaryAttrs>::ResolveFn Plain(UnaryKind kind,
                                            Params params = {}) {
  return [kind, params](const SchemaNode& node) -> absl::StatusOr<UnaryAttrs> {
    UnaryAttrs u;
    u.kind = kind;
    const NodeAttributes& a = node.attributes;
    for (absl::Status s :
         {ReadParam(a, params.alpha, params.alpha_default, &u.alpha),
          ReadParam(a, params.beta, params.beta_default, &u.beta),
          ReadParam(a, params.gamma, params.gamma_default, &u.gamma)}) {
      if (!s.ok()) return s;
    }
    return u;
  };
}

absl::StatusOr<UnaryAttrs> ResolveGelu(const SchemaNode& node, bool internal) {
  if (!internal && node.opset < 20) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gelu needs opset 20 or later, the model has opset ", node.opset));
  }
  absl::StatusOr<std::string> approximate =
      node.attributes.GetString("approximate", "none");
  if (!approximate.ok()) return approximate.status();
  if (*approximate != "none" && *approximate != "tanh") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'approximate' must be \"none\" or \"tanh\", got \"",
        *approximate, "\""));
  }
  UnaryAttrs u;
  u.kind = *approximate == "tanh" ? UnaryKind::kGeluTanh : UnaryKind::kGeluErf;
  return u;
}

absl::StatusOr<UnaryAttrs> ResolveClip(const SchemaNode& node) {
  UnaryAttrs u;
  u.kind = UnaryKind::kClip;
  if (node.opset >= 11) {
    u.bounds_from_inputs = true;
    u.alpha = -std::numeric_limits<float>::infinity();
    u.beta = std::numeric_limits<float>::infinity();
    return u;
  }
  // Opset 6 defaults: the float range.
  absl::StatusOr<float> lo =
      node.attributes.GetFloat("min", std::numeric_limits<float>::lowest());
  absl::StatusOr<float> hi =
      node.attributes.GetFloat("max", std::numeric_limits<float>::max());
  if (!lo.ok()) return lo.status();
  if (!hi.ok()) return hi.status();
  u.alpha = *lo;
  u.beta = *hi;
  return u;
}

absl::Status InferUnary(const UnaryAttrs& attrs,
                        absl::Span<const TensorInfo> in,
                        absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  if (attrs.bounds_from_inputs) {
    for (size_t i = 1; i < in.size() && i < 3; ++i) {
      if (!in[i].present()) continue;
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
      if (DimProduct(in[i].shape, 0, in[i].shape.size()) != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(i == 1 ? "min" : "max", " must be a scalar, got ",
                         ShapeToString(in[i].shape)));
      }
    }
  }
  out[0].dtype = DataType::kFp32;
  out[0].shape = in[0].shape;
  return absl::OkStatus();
}

std::shared_ptr<const OpSchema> Schema(
    FunctionSchema<UnaryAttrs>::ResolveFn resolve) {
  return std::make_shared<FunctionSchema<UnaryAttrs>>(std::move(resolve),
                                                      &InferUnary);
}

}  // namespace

void RegisterUnarySchemas(SchemaRegistry& registry) {
  using K = UnaryKind;
  for (const auto& [op, kind] : {std::pair{"Relu", K::kRelu},
                                 {"Sigmoid", K::kSigmoid},
                                 {"Tanh", K::kTanh},
                                 {"Sqrt", K::kSqrt},
                                 {"Exp", K::kExp},
                                 {"Log", K::kLog},
                                 {"Reciprocal", K::kReciprocal},
                                 {"Erf", K::kErf},
                                 {"Softplus", K::kSoftplus},
                                 {"Softsign", K::kSoftsign},
                                 {"Floor", K::kFloor},
                                 {"Ceil", K::kCeil},
                                 {"Round", K::kRound},
                                 {"Sin", K::kSin},
                                 {"Cos", K::kCos},
                                 {"HardSwish", K::kHardSwish},
                                 {"Mish", K::kMish}}) {
    registry.Register(op, Schema(Plain(kind)));
  }
  registry.Register(
      "LeakyRelu",
      Schema(Plain(K::kLeakyRelu, {.alpha = "alpha", .alpha_default = 0.01f})));
  registry.Register(
      "Elu", Schema(Plain(K::kElu, {.alpha = "alpha", .alpha_default = 1.0f})));
  registry.Register(
      "Selu",
      Schema(Plain(K::kSelu, {.alpha = "alpha",
                              .alpha_default = 1.67326319217681884765625f,
                              .gamma = "gamma",
                              .gamma_default = 1.05070102214813232421875f})));
  registry.Register("HardSigmoid",
                    Schema(Plain(K::kHardSigmoid, {.alpha = "alpha",
                                                   .alpha_default = 0.2f,
                                                   .beta = "beta",
                                                   .beta_default = 0.5f})));
  registry.Register(
      "Celu",
      Schema(Plain(K::kCelu, {.alpha = "alpha", .alpha_default = 1.0f})));
  registry.Register("ThresholdedRelu",
                    Schema(Plain(K::kThresholdedRelu,
                                 {.alpha = "alpha", .alpha_default = 1.0f})));
  registry.Register("Gelu", Schema([](const SchemaNode& node) {
                      return ResolveGelu(node, /*internal=*/false);
                    }));
  registry.RegisterInternal("Gelu", Schema([](const SchemaNode& node) {
                              return ResolveGelu(node, /*internal=*/true);
                            }));
  registry.Register("Clip", Schema(&ResolveClip));
}

}  // namespace coalesce
