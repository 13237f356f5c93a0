// Add, Sub, Mul, Div and Mod (fmod 0: floored, fmod 1: truncated) on FP32,
// FP64 and 8- to 64-bit signed and unsigned integer tensors with
// multidirectional broadcasting, and Sign, Abs and Neg on the same types.
// Integer semantics (wrapping, division by zero) are in
// kernels/cpu/elementwise.h. BOOL, FP16, BF16 and STRING are refused when
// planning.
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/elementwise_schema.h"
#include "kernels/cpu/elementwise.h"

namespace coalesce {
namespace {

class BinaryOpKernel : public OpKernel {
 public:
  explicit BinaryOpKernel(kernels::BinaryOp op) : op_(op) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() != 2 || !in[0].present())
      return absl::InvalidArgumentError("needs two inputs");
    const DataType t = in[0].dtype;
    if (!IsArithmeticType(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported type ", std::string(DataTypeName(t)),
                       " (FP32, FP64 and 8- to 64-bit integers are)"));
    }
    if (absl::Status s = ExpectInputType(in, 1, t); !s.ok()) return s;
    auto shape = kernels::BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeToString(in[0].shape), " and ",
                       ShapeToString(in[1].shape), " do not broadcast"));
    }
    out[0].dtype = t;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        kernels::BroadcastBinary<T>(op_, in[0].as<T>(), *in[0].shape,
                                    in[1].as<T>(), *in[1].shape,
                                    out[0].as<T>());
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  kernels::BinaryOp op_;
};

OpFactory BinaryFactory(kernels::BinaryOp op) {
  return [op](const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return std::make_unique<BinaryOpKernel>(op);
  };
}

// Mod's fmod comes from its schema (engine/schema/elementwise_schema.h).
absl::StatusOr<std::unique_ptr<OpKernel>> CreateMod(const OpNode& node) {
  const ModAttrs* attrs = node.resolved_as<ModAttrs>();
  if (attrs == nullptr) return absl::InternalError("Mod has no schema");
  return std::make_unique<BinaryOpKernel>(
      attrs->fmod ? kernels::BinaryOp::kFmod : kernels::BinaryOp::kMod);
}

// Sign, Abs and Neg on every arithmetic type.
class UnaryArithmeticKernel : public OpKernel {
 public:
  explicit UnaryArithmeticKernel(kernels::UnaryArithmeticOp op) : op_(op) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("needs one input");
    if (!IsArithmeticType(in[0].dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input 0 has type ", std::string(DataTypeName(in[0].dtype)),
          " (FP32, FP64 and 8- to 64-bit integers are supported)"));
    }
    out[0] = {in[0].dtype, in[0].shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t n = DimProduct(*in[0].shape, 0, in[0].shape->size());
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        kernels::UnaryArithmetic<T>(op_, in[0].as<T>(), n, out[0].as<T>());
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  kernels::UnaryArithmeticOp op_;
};

}  // namespace

void RegisterBinaryOps(OpRegistry& registry) {
  registry.Register("Add", BinaryFactory(kernels::BinaryOp::kAdd));
  registry.Register("Sub", BinaryFactory(kernels::BinaryOp::kSub));
  registry.Register("Mul", BinaryFactory(kernels::BinaryOp::kMul));
  registry.Register("Div", BinaryFactory(kernels::BinaryOp::kDiv));
  registry.Register("Mod", &CreateMod);
  using kernels::UnaryArithmeticOp;
  for (auto [name, op] : {std::pair{"Sign", UnaryArithmeticOp::kSign},
                          std::pair{"Abs", UnaryArithmeticOp::kAbs},
                          std::pair{"Neg", UnaryArithmeticOp::kNeg}}) {
    registry.Register(name,
                      [op = op](const OpNode& node)
                          -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                        return std::make_unique<UnaryArithmeticKernel>(op);
                      });
  }
}

}  // namespace coalesce
