// Float elementwise math, output shape = input (Abs and Neg, which take
// every arithmetic type, are binary.cc's): Sqrt, Exp, Log, Reciprocal, Erf,
// Softplus, Softsign, LeakyRelu(alpha), Elu(alpha), Selu(alpha, gamma),
// HardSigmoid(alpha, beta), Gelu(approximate; opset >= 20), Floor, Ceil, Round
// (ties to even), Sin, Cos, HardSwish, Mish, Celu(alpha),
// ThresholdedRelu(alpha) and Clip (min/max attributes before opset 11,
// optional scalar inputs since).
#include "kernels/cpu/unary_math.h"

#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

absl::Status ExpectFloatInput(absl::Span<const TensorInfo> in,
                              absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  out[0].dtype = DataType::kFp32;
  out[0].shape = in[0].shape;
  return absl::OkStatus();
}

int64_t ElementsOf(const ConstTensorView& t) {
  return DimProduct(*t.shape, 0, t.shape->size());
}

class UnaryMathOp : public OpKernel {
 public:
  UnaryMathOp(kernels::UnaryOp op, kernels::UnaryParams params)
      : op_(op), params_(params) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    return ExpectFloatInput(in, out);
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::Unary(op_, params_, in[0].as<float>(), ElementsOf(in[0]),
                   out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  kernels::UnaryOp op_;
  kernels::UnaryParams params_;
};

// Which float attributes an operator reads into UnaryParams, and their
// defaults; a null name means "not used".
struct AttributeSpec {
  const char* alpha = nullptr;
  float alpha_default = 0.0f;
  const char* beta = nullptr;
  float beta_default = 0.0f;
  const char* gamma = nullptr;
  float gamma_default = 0.0f;
};

absl::Status ReadParam(const OpNode& node, const char* name, float fallback,
                       float* value) {
  if (name == nullptr) return absl::OkStatus();
  absl::StatusOr<float> v = node.GetFloat(name, fallback);
  if (!v.ok()) return v.status();
  *value = *v;
  return absl::OkStatus();
}

OpFactory UnaryFactory(kernels::UnaryOp op, AttributeSpec spec = {}) {
  return [op, spec](
             const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    kernels::UnaryParams p;
    for (absl::Status s :
         {ReadParam(node, spec.alpha, spec.alpha_default, &p.alpha),
          ReadParam(node, spec.beta, spec.beta_default, &p.beta),
          ReadParam(node, spec.gamma, spec.gamma_default, &p.gamma)}) {
      if (!s.ok()) return s;
    }
    return std::make_unique<UnaryMathOp>(op, p);
  };
}

// Gelu's `approximate` string attribute: "none" (default) or "tanh".
// The internal-domain Gelu the graph optimizer fuses from Erf or Tanh
// patterns exists at any opset.
absl::StatusOr<std::unique_ptr<OpKernel>> CreateGelu(const OpNode& node) {
  if (node.opset() < 20 &&
      node.proto().domain() != OpRegistry::kInternalDomain) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gelu needs opset 20 or later, the model has opset ", node.opset()));
  }
  std::string approximate = "none";
  for (const onnx::AttributeProto& attr : node.proto().attribute()) {
    if (attr.name() != "approximate") continue;
    if (attr.type() != onnx::AttributeProto::STRING) {
      return absl::InvalidArgumentError(
          "attribute 'approximate' must be of type STRING");
    }
    approximate = attr.s();
  }
  if (approximate != "none" && approximate != "tanh") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'approximate' must be \"none\" or \"tanh\", got \"",
        approximate, "\""));
  }
  return std::make_unique<UnaryMathOp>(approximate == "tanh"
                                           ? kernels::UnaryOp::kGeluTanh
                                           : kernels::UnaryOp::kGelu,
                                       kernels::UnaryParams{});
}

// Clip. Opset < 11: bounds from the `min`/`max` attributes. Opset >= 11:
// bounds from optional scalar inputs 1 and 2, read when the node runs.
class ClipOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    if (node.opset() >= 11) return std::make_unique<ClipOp>(-kInf, kInf, true);
    // Opset 6 defaults: the float range.
    absl::StatusOr<float> lo =
        node.GetFloat("min", std::numeric_limits<float>::lowest());
    if (!lo.ok()) return lo.status();
    absl::StatusOr<float> hi =
        node.GetFloat("max", std::numeric_limits<float>::max());
    if (!hi.ok()) return hi.status();
    return std::make_unique<ClipOp>(*lo, *hi, false);
  }

  ClipOp(float lo, float hi, bool bounds_are_inputs)
      : lo_(lo), hi_(hi), bounds_are_inputs_(bounds_are_inputs) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectFloatInput(in, out); !s.ok()) return s;
    if (!bounds_are_inputs_) return absl::OkStatus();
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
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    float lo = lo_, hi = hi_;
    if (bounds_are_inputs_) {
      if (in.size() > 1 && in[1].present()) lo = in[1].as<float>()[0];
      if (in.size() > 2 && in[2].present()) hi = in[2].as<float>()[0];
    }
    kernels::Clip(in[0].as<float>(), ElementsOf(in[0]), lo, hi,
                  out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  float lo_, hi_;
  bool bounds_are_inputs_;
};

}  // namespace

void RegisterUnaryMathOps(OpRegistry& registry) {
  using kernels::UnaryOp;
  registry.Register("Sqrt", UnaryFactory(UnaryOp::kSqrt));
  registry.Register("Exp", UnaryFactory(UnaryOp::kExp));
  registry.Register("Log", UnaryFactory(UnaryOp::kLog));
  registry.Register("Reciprocal", UnaryFactory(UnaryOp::kReciprocal));
  registry.Register("Erf", UnaryFactory(UnaryOp::kErf));
  registry.Register("Softplus", UnaryFactory(UnaryOp::kSoftplus));
  registry.Register("Softsign", UnaryFactory(UnaryOp::kSoftsign));
  registry.Register("LeakyRelu",
                    UnaryFactory(UnaryOp::kLeakyRelu,
                                 {.alpha = "alpha", .alpha_default = 0.01f}));
  registry.Register(
      "Elu",
      UnaryFactory(UnaryOp::kElu, {.alpha = "alpha", .alpha_default = 1.0f}));
  registry.Register(
      "Selu", UnaryFactory(UnaryOp::kSelu,
                           {.alpha = "alpha",
                            .alpha_default = 1.67326319217681884765625f,
                            .gamma = "gamma",
                            .gamma_default = 1.05070102214813232421875f}));
  registry.Register("HardSigmoid", UnaryFactory(UnaryOp::kHardSigmoid,
                                                {.alpha = "alpha",
                                                 .alpha_default = 0.2f,
                                                 .beta = "beta",
                                                 .beta_default = 0.5f}));
  registry.Register("Floor", UnaryFactory(UnaryOp::kFloor));
  registry.Register("Ceil", UnaryFactory(UnaryOp::kCeil));
  registry.Register("Round", UnaryFactory(UnaryOp::kRound));
  registry.Register("Sin", UnaryFactory(UnaryOp::kSin));
  registry.Register("Cos", UnaryFactory(UnaryOp::kCos));
  registry.Register("HardSwish", UnaryFactory(UnaryOp::kHardSwish));
  registry.Register("Mish", UnaryFactory(UnaryOp::kMish));
  registry.Register(
      "Celu",
      UnaryFactory(UnaryOp::kCelu, {.alpha = "alpha", .alpha_default = 1.0f}));
  registry.Register("ThresholdedRelu",
                    UnaryFactory(UnaryOp::kThresholdedRelu,
                                 {.alpha = "alpha", .alpha_default = 1.0f}));
  registry.Register("Gelu", &CreateGelu);
  registry.RegisterInternal("Gelu", &CreateGelu);
  registry.Register("Clip", FactoryOf<ClipOp>());
}

}  // namespace coalesce
