// BatchNormalization (engine/schema/normalization_schema.h) on the CPU:
// Relu and Clip clamp as values are stored, other fused activations run as
// a second pass.
#include "kernels/cpu/batch_norm.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/normalization_schema.h"

namespace coalesce {
namespace {

class BatchNormOp : public SchemaKernel {
 public:
  BatchNormOp(const OpNode& node, const BatchNormAttrs& attrs)
      : SchemaKernel(node),
        epsilon_(attrs.epsilon),
        channels_last_(attrs.channels_last),
        activation_(ToKernelActivation(attrs.activation)) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    kernels::BatchNormParams params{.scale = in[1].as<float>(),
                                    .bias = in[2].as<float>(),
                                    .mean = in[3].as<float>(),
                                    .var = in[4].as<float>(),
                                    .epsilon = epsilon_};
    using Kind = kernels::FusedActivation::Kind;
    const bool clamps =
        activation_.kind == Kind::kRelu || activation_.kind == Kind::kClip;
    if (activation_.kind == Kind::kRelu) params.lower = 0.0f;
    if (activation_.kind == Kind::kClip) {
      params.lower = activation_.alpha;
      params.upper = activation_.beta;
    }
    float* y = out[0].as<float>();
    if (channels_last_) {
      kernels::BatchNormInferenceChannelsLast(params, in[0].as<float>(),
                                              DimProduct(x, 0, x.size() - 1),
                                              x.back(), y);
    } else {
      kernels::BatchNormInference(params, in[0].as<float>(), x[0], x[1],
                                  DimProduct(x, 2, x.size()), y);
    }
    if (!clamps)
      kernels::ApplyFusedActivation(activation_, y, DimProduct(x, 0, x.size()));
    return absl::OkStatus();
  }

 private:
  const float epsilon_;
  const bool channels_last_;  // X [N, ..., C]
  const kernels::FusedActivation activation_;
};

}  // namespace

void RegisterBatchNormOp(OpRegistry& registry) {
  registry.Register("BatchNormalization",
                    SchemaFactoryOf<BatchNormOp, BatchNormAttrs>());
}

}  // namespace coalesce
