// Add, Sub, Mul, Div on float, int64 and int32 tensors with multidirectional
// broadcasting. Integer semantics (wrapping, division) are in
// kernels/cpu/elementwise.h.
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
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
    if (t != DataType::kFp32 && t != DataType::kInt64 &&
        t != DataType::kInt32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported type ", std::string(DataTypeName(t)),
          " (float, int64 and int32 are)"));
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
    switch (in[0].dtype) {
      case DataType::kInt64:
        return RunAs<int64_t>(in, out);
      case DataType::kInt32:
        return RunAs<int32_t>(in, out);
      default:
        return RunAs<float>(in, out);
    }
  }

 private:
  template <typename T>
  absl::Status RunAs(absl::Span<const ConstTensorView> in,
                     absl::Span<const TensorView> out) const {
    kernels::BroadcastBinary<T>(op_, in[0].as<T>(), *in[0].shape,
                                in[1].as<T>(), *in[1].shape, out[0].as<T>());
    return absl::OkStatus();
  }

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
