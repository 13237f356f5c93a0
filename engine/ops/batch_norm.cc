// BatchNormalization in inference mode (opsets 1 to 15): X is [N, C, ...],
// scale, B, input_mean and input_var are [C]. Training mode (opset 14's
// training_mode = 1) and the per-activation form of opsets below 9
// (spatial = 0) are refused at load. The int attribute "channels_last"
// (default 0; the optimizer's layout pass sets it) makes X [N, ..., C], and
// the pass may fuse a Relu after it (fused_activation_attr.h: Relu and
// Clip clamp as values are stored, others run as a second pass).
#include "kernels/cpu/batch_norm.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"

namespace coalesce {
namespace {

class BatchNormOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<BatchNormOp>();
    absl::StatusOr<float> epsilon = node.GetFloat("epsilon", 1e-5f);
    absl::StatusOr<int64_t> training = node.GetInt("training_mode", 0);
    absl::StatusOr<int64_t> spatial = node.GetInt("spatial", 1);
    for (const absl::Status& s :
         {epsilon.status(), training.status(), spatial.status()})
      if (!s.ok()) return s;
    if (*training != 0) {
      return absl::InvalidArgumentError(
          "training_mode = 1 is not supported (inference only)");
    }
    if (*spatial != 1) {
      return absl::InvalidArgumentError(
          "spatial = 0 (per-activation statistics) is not supported");
    }
    if (node.num_outputs() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "only the Y output of inference mode is supported, the node has ",
          node.num_outputs(), " outputs"));
    }
    absl::StatusOr<int64_t> channels_last = node.GetInt("channels_last", 0);
    if (!channels_last.ok()) return channels_last.status();
    if (*channels_last != 0 && *channels_last != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("channels_last must be 0 or 1, got ", *channels_last));
    }
    absl::StatusOr<kernels::FusedActivation> act = ParseFusedActivation(node);
    if (!act.ok()) return act.status();
    op->epsilon_ = *epsilon;
    op->channels_last_ = *channels_last == 1;
    op->activation_ = *act;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() != 5) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected 5 inputs, got ", in.size()));
    }
    for (int i = 0; i < 5; ++i)
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
    const Shape& x = in[0].shape;
    if (x.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("X ", ShapeToString(x), " must have a channel dim"));
    }
    static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean",
                                             "input_var"};
    const int64_t channels = channels_last_ ? x.back() : x[1];
    for (int i = 1; i < 5; ++i) {
      if (in[i].shape != Shape{channels}) {
        return absl::InvalidArgumentError(
            absl::StrCat(kNames[i], " ", ShapeToString(in[i].shape),
                         " must be [", channels, "] for X ", ShapeToString(x),
                         channels_last_ ? " (channels-last)" : ""));
      }
    }
    out[0] = {DataType::kFp32, x, nullptr};
    return absl::OkStatus();
  }

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
  float epsilon_ = 1e-5f;
  bool channels_last_ = false;  // X [N, ..., C]
  kernels::FusedActivation activation_;
};

}  // namespace

void RegisterBatchNormOp(OpRegistry& registry) {
  registry.Register("BatchNormalization", FactoryOf<BatchNormOp>());
}

}  // namespace coalesce
