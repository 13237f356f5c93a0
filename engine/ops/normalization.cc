// LayerNormalization, InstanceNormalization and GroupNormalization on the
// CPU (engine/schema/normalization_schema.h says what they compute).
#include <memory>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/normalization_schema.h"
#include "kernels/cpu/group_norm.h"
#include "kernels/cpu/layer_norm.h"

namespace coalesce {
namespace {

// Attributes and inference: engine/schema/normalization_schema.h.
class LayerNormOp : public SchemaKernel {
 public:
  LayerNormOp(const OpNode& node, const LayerNormAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    const int64_t axis = *NormalizeAxis(attrs_.axis, x.size());
    kernels::LayerNormParams p;
    p.epsilon = attrs_.epsilon;
    p.scale = in[1].as<float>();
    p.scale_is_scalar = DimProduct(*in[1].shape, 0, in[1].shape->size()) == 1;
    if (in.size() > 2 && in[2].present()) {
      p.bias = in[2].as<float>();
      p.bias_is_scalar = DimProduct(*in[2].shape, 0, in[2].shape->size()) == 1;
    }
    kernels::LayerNorm(in[0].as<float>(), DimProduct(x, 0, axis),
                       DimProduct(x, axis, x.size()), p, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const LayerNormAttrs attrs_;
};

// InstanceNormalization and GroupNormalization.
class GroupNormOp : public SchemaKernel {
 public:
  GroupNormOp(const OpNode& node, const GroupNormAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    kernels::GroupNormParams p;
    p.n = x[0];
    p.c = x[1];
    p.spatial = DimProduct(x, 2, x.size());
    p.groups = attrs_.num_groups == 0 ? x[1] : attrs_.num_groups;
    p.epsilon = attrs_.epsilon;
    p.scale = in[1].as<float>();
    p.bias = in[2].as<float>();
    p.affine_per_group = attrs_.affine_per_group;
    kernels::GroupNorm(in[0].as<float>(), p, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const GroupNormAttrs attrs_;
};

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.Register("LayerNormalization",
                    SchemaFactoryOf<LayerNormOp, LayerNormAttrs>());
  registry.Register("InstanceNormalization",
                    SchemaFactoryOf<GroupNormOp, GroupNormAttrs>());
  registry.Register("GroupNormalization",
                    SchemaFactoryOf<GroupNormOp, GroupNormAttrs>());
}

}  // namespace coalesce
