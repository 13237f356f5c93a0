// Add, Sub, Mul, Div on float tensors with multidirectional broadcasting.
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
    for (int i : {0, 1}) {
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
    }
    auto shape = kernels::BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeToString(in[0].shape), " and ",
                       ShapeToString(in[1].shape), " do not broadcast"));
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::BroadcastBinary(op_, in[0].as<float>(), *in[0].shape,
                             in[1].as<float>(), *in[1].shape,
                             out[0].as<float>());
    return absl::OkStatus();
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
