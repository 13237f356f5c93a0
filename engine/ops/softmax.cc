// Softmax and LogSoftmax on the CPU (engine/schema/softmax_schema.h says
// what they compute).
#include "kernels/cpu/softmax.h"

#include <memory>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/softmax_schema.h"

namespace coalesce {
namespace {

using SoftmaxFn = void (*)(const float*, int64_t, int64_t, int64_t, float*);

// Attributes and inference: engine/schema/softmax_schema.h.
class SoftmaxOp : public SchemaKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          SoftmaxFn fn) {
    const SoftmaxAttrs* attrs = node.resolved_as<SoftmaxAttrs>();
    if (attrs == nullptr) return absl::InternalError("Softmax has no schema");
    return std::make_unique<SoftmaxOp>(node, *attrs, fn);
  }

  SoftmaxOp(const OpNode& node, const SoftmaxAttrs& attrs, SoftmaxFn fn)
      : SchemaKernel(node), attrs_(attrs), fn_(fn) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    const int64_t axis = *NormalizeAxis(attrs_.axis, s.size());
    const int64_t outer = DimProduct(s, 0, axis);
    if (attrs_.legacy) {
      fn_(in[0].as<float>(), outer, DimProduct(s, axis, s.size()), 1,
          out[0].as<float>());
    } else {
      fn_(in[0].as<float>(), outer, s[axis], DimProduct(s, axis + 1, s.size()),
          out[0].as<float>());
    }
    return absl::OkStatus();
  }

 private:
  const SoftmaxAttrs attrs_;
  SoftmaxFn fn_;
};

OpFactory SoftmaxFactory(SoftmaxFn fn) {
  return [fn](const OpNode& node) { return SoftmaxOp::Create(node, fn); };
}

}  // namespace

void RegisterSoftmaxOp(OpRegistry& registry) {
  registry.Register("Softmax", SoftmaxFactory(&kernels::Softmax));
  registry.Register("LogSoftmax", SoftmaxFactory(&kernels::LogSoftmax));
}

}  // namespace coalesce
