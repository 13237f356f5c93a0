// LRN (engine/schema/normalization_schema.h) on the CPU.
#include "kernels/cpu/lrn.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/normalization_schema.h"

namespace coalesce {
namespace {

class LrnOp : public SchemaKernel {
 public:
  LrnOp(const OpNode& node, const LrnAttrs& attrs)
      : SchemaKernel(node),
        params_{.size = attrs.size,
                .alpha = attrs.alpha,
                .beta = attrs.beta,
                .bias = attrs.bias} {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    kernels::Lrn(in[0].as<float>(), s[0], s[1], DimProduct(s, 2, s.size()),
                 params_, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  kernels::LrnParams params_;
};

}  // namespace

void RegisterLrnOp(OpRegistry& registry) {
  registry.Register("LRN", SchemaFactoryOf<LrnOp, LrnAttrs>());
}

}  // namespace coalesce
