// Add, Sub, Mul, Div on FP32, FP64 and 8- to 64-bit signed and unsigned
// integer tensors with multidirectional broadcasting. Integer semantics
// (wrapping, division by zero) are in kernels/cpu/elementwise.h. BOOL, FP16,
// BF16 and STRING are refused when planning.
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/elementwise.h"

namespace coalesce {
namespace {

bool IsArithmeticType(DataType t) {
  switch (t) {
    case DataType::kFp32:
    case DataType::kFp64:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

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

}  // namespace

void RegisterBinaryOps(OpRegistry& registry) {
  registry.Register("Add", BinaryFactory(kernels::BinaryOp::kAdd));
  registry.Register("Sub", BinaryFactory(kernels::BinaryOp::kSub));
  registry.Register("Mul", BinaryFactory(kernels::BinaryOp::kMul));
  registry.Register("Div", BinaryFactory(kernels::BinaryOp::kDiv));
}

}  // namespace coalesce
