// The ReduceX family on the CPU (engine/schema/reduce_schema.h says what
// each computes and where its axes come from).
#include "kernels/cpu/reduce.h"

#include <memory>
#include <vector>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/reduce_schema.h"

namespace coalesce {
namespace {

class ReduceOpKernel : public SchemaKernel {
 public:
  ReduceOpKernel(const OpNode& node, const ReduceAttrs& attrs,
                 kernels::ReduceOp op)
      : SchemaKernel(node), attrs_(attrs), op_(op) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& shape = *in[0].shape;
    TensorInfo axes;
    const char* axes_data = nullptr;
    if (in.size() > 1 && in[1].present()) {
      axes = {in[1].dtype, *in[1].shape, nullptr};
      axes_data = in[1].data;
    }
    absl::StatusOr<std::vector<bool>> reduce =
        ReducedDims(attrs_, shape, axes, axes_data);
    if (!reduce.ok()) return reduce.status();
    kernels::Reduce(op_, in[0].as<float>(), shape, *reduce, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const ReduceAttrs attrs_;
  const kernels::ReduceOp op_;
};

OpFactory ReduceFactory(kernels::ReduceOp op) {
  return [op](const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    const ReduceAttrs* attrs = node.resolved_as<ReduceAttrs>();
    if (attrs == nullptr) return absl::InternalError("Reduce has no schema");
    return std::make_unique<ReduceOpKernel>(node, *attrs, op);
  };
}

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  using kernels::ReduceOp;
  registry.Register("ReduceSum", ReduceFactory(ReduceOp::kSum));
  registry.Register("ReduceMean", ReduceFactory(ReduceOp::kMean));
  registry.Register("ReduceMax", ReduceFactory(ReduceOp::kMax));
  registry.Register("ReduceMin", ReduceFactory(ReduceOp::kMin));
  registry.Register("ReduceProd", ReduceFactory(ReduceOp::kProd));
  registry.Register("ReduceL1", ReduceFactory(ReduceOp::kL1));
  registry.Register("ReduceL2", ReduceFactory(ReduceOp::kL2));
  registry.Register("ReduceSumSquare", ReduceFactory(ReduceOp::kSumSquare));
  registry.Register("ReduceLogSum", ReduceFactory(ReduceOp::kLogSum));
  registry.Register("ReduceLogSumExp", ReduceFactory(ReduceOp::kLogSumExp));
}

}  // namespace coalesce
