// Pow (float base and exponent, multidirectional broadcasting) and PRelu
// (slope broadcast unidirectionally to X; output shape = X).
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/broadcast_math.h"
#include "kernels/cpu/elementwise.h"

namespace coalesce {
namespace {

absl::Status CheckFloatPair(absl::Span<const TensorInfo> in) {
  for (int i : {0, 1}) {
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status NotBroadcastable(const Shape& a, const Shape& b, const char* how) {
  return absl::InvalidArgumentError(absl::StrCat(
      "shapes ", ShapeToString(a), " and ", ShapeToString(b), " do not ", how));
}

// Opset 1 Pow and PRelu < 7 used the legacy `broadcast`/`axis` attributes.
absl::Status RejectLegacyBroadcast(const OpNode& node) {
  if (node.HasAttribute("axis") || node.HasAttribute("broadcast")) {
    return absl::InvalidArgumentError(
        "the legacy 'broadcast'/'axis' attributes are not supported");
  }
  return absl::OkStatus();
}

class PowOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    if (absl::Status s = RejectLegacyBroadcast(node); !s.ok()) return s;
    return std::make_unique<PowOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = CheckFloatPair(in); !s.ok()) return s;
    auto shape = kernels::BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape) return NotBroadcastable(in[0].shape, in[1].shape, "broadcast");
    out[0].dtype = DataType::kFp32;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::BroadcastMath(kernels::MathBinaryOp::kPow, in[0].as<float>(),
                           *in[0].shape, in[1].as<float>(), *in[1].shape,
                           out[0].as<float>());
    return absl::OkStatus();
  }
};

class PReluOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    if (absl::Status s = RejectLegacyBroadcast(node); !s.ok()) return s;
    return std::make_unique<PReluOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = CheckFloatPair(in); !s.ok()) return s;
    auto shape = kernels::BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape || *shape != in[0].shape) {
      return NotBroadcastable(in[1].shape, in[0].shape,
                              "broadcast unidirectionally (slope to X)");
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::BroadcastMath(kernels::MathBinaryOp::kPRelu, in[0].as<float>(),
                           *in[0].shape, in[1].as<float>(), *in[1].shape,
                           out[0].as<float>());
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterPowPReluOps(OpRegistry& registry) {
  registry.Register("Pow", FactoryOf<PowOp>());
  registry.Register("PRelu", FactoryOf<PReluOp>());
}

}  // namespace coalesce
