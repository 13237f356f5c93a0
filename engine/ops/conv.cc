// Conv (opsets 1 to 22) on oneDNN, and FusedConv (internal domain): the same
// with an activation the graph optimizer folded in (see
// fused_activation_attr.h). X is [N, C, spatial...] with 1 to 3 spatial dims,
// W is [M, C / group, kernel...], the optional B is [M], Y is
// [N, M, out spatial...].
//
// The int attribute "channels_last" (default 0; the layout pass sets it on
// FusedConv, and Conv accepts it too, as it does "activation") makes X
// [N, spatial..., C] and Y [N, out spatial..., M]; W and B keep their layouts.
#include "kernels/cpu/conv.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/conv_attributes.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"

namespace coalesce {
namespace {

std::vector<int64_t> Tail(const Shape& shape) {
  return std::vector<int64_t>(shape.begin() + 2, shape.end());
}

// An activation's channel count and spatial dims: [N, C, spatial...], or
// [N, spatial..., C] when `channels_last`. REQUIRES: rank >= 3.
int64_t ChannelsOf(const Shape& x, bool channels_last) {
  return channels_last ? x.back() : x[1];
}
std::vector<int64_t> SpatialOf(const Shape& x, bool channels_last) {
  return channels_last ? std::vector<int64_t>(x.begin() + 1, x.end() - 1)
                       : Tail(x);
}

absl::StatusOr<bool> ParseChannelsLast(const OpNode& node) {
  absl::StatusOr<int64_t> value = node.GetInt("channels_last", 0);
  if (!value.ok()) return value.status();
  if (*value != 0 && *value != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels_last must be 0 or 1, got ", *value));
  }
  return *value == 1;
}

class PreparedConv : public PreparedKernel {
 public:
  explicit PreparedConv(std::unique_ptr<kernels::ConvPrimitive> primitive)
      : primitive_(std::move(primitive)) {}

  size_t scratch_bytes() const override { return primitive_->scratch_bytes(); }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    const float* bias =
        in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    return primitive_->Run(in[0].as<float>(), in[1].as<float>(), bias,
                           out[0].as<float>(), scratch);
  }

 private:
  std::unique_ptr<kernels::ConvPrimitive> primitive_;
};

class ConvOp : public PreparedOnlyKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<ConvOp>();
    absl::StatusOr<ConvAttributes> attrs = ParseConvAttributes(node);
    if (!attrs.ok()) return attrs.status();
    absl::StatusOr<kernels::FusedActivation> act = ParseFusedActivation(node);
    if (!act.ok()) return act.status();
    absl::StatusOr<bool> channels_last = ParseChannelsLast(node);
    if (!channels_last.ok()) return channels_last.status();
    op->attrs_ = *std::move(attrs);
    op->activation_ = *act;
    op->channels_last_ = *channels_last;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    absl::StatusOr<kernels::ConvGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    out[0].dtype = DataType::kFp32;
    Shape& y = out[0].shape;
    y = {g->batch};
    if (!channels_last_) y.push_back(g->out_channels);
    y.insert(y.end(), g->out_spatial.begin(), g->out_spatial.end());
    if (channels_last_) y.push_back(g->out_channels);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<kernels::ConvGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    const bool has_bias = in.size() > 2 && in[2].present();
    const char* weights = in[1].constant_data;
    absl::StatusOr<std::unique_ptr<kernels::ConvPrimitive>> primitive =
        kernels::ConvPrimitive::Create(
            *g, has_bias, activation_, reinterpret_cast<const float*>(weights),
            weights != nullptr ? &weights_cache_ : nullptr);
    if (!primitive.ok()) return primitive.status();
    return std::make_unique<PreparedConv>(*std::move(primitive));
  }

 private:
  absl::StatusOr<kernels::ConvGeometry> Geometry(
      absl::Span<const TensorInfo> in) const {
    for (int i : {0, 1})
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
    const Shape& x = in[0].shape;
    const Shape& w = in[1].shape;
    if (x.size() < 3 || w.size() != x.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("X ", ShapeToString(x), " and W ", ShapeToString(w),
                       " must have the same rank, at least 3"));
    }
    const int64_t group = attrs_.group;
    const int64_t channels = ChannelsOf(x, channels_last_);
    if (channels != w[1] * group || w[0] % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "X ", ShapeToString(x),
          channels_last_ ? " (channels-last, [N, spatial..., C])" : "", " has ",
          channels, " channels but W ", ShapeToString(w), " with group ", group,
          " expects ", w[1] * group,
          " (and output channels divisible by the group)"));
    }
    if (absl::Status s = CheckBias(in, w[0]); !s.ok()) return s;
    const std::vector<int64_t> in_spatial = SpatialOf(x, channels_last_);
    absl::StatusOr<SpatialGeometry> s =
        ResolveConvGeometry(attrs_, in_spatial, Tail(w));
    if (!s.ok()) return s.status();
    return kernels::ConvGeometry{.batch = x[0],
                                 .in_channels = channels,
                                 .out_channels = w[0],
                                 .groups = group,
                                 .in_spatial = in_spatial,
                                 .out_spatial = s->out,
                                 .kernel = s->kernel,
                                 .strides = s->strides,
                                 .dilations = s->dilations,
                                 .pads_begin = s->pads_begin,
                                 .pads_end = s->pads_end,
                                 .channels_last = channels_last_};
  }

  // OK when B is absent or an fp32 [out_channels].
  static absl::Status CheckBias(absl::Span<const TensorInfo> in,
                                int64_t out_channels) {
    if (in.size() < 3 || !in[2].present()) return absl::OkStatus();
    if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
      return s;
    if (in[2].shape != Shape{out_channels}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "B ", ShapeToString(in[2].shape), " must be [", out_channels, "]"));
    }
    return absl::OkStatus();
  }

  ConvAttributes attrs_;
  kernels::FusedActivation activation_;
  bool channels_last_ = false;  // X and Y are [N, spatial..., C]
  mutable kernels::ConvWeightsCache weights_cache_;
};

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  registry.Register("Conv", FactoryOf<ConvOp>());
  registry.RegisterInternal("FusedConv", FactoryOf<ConvOp>());
}

}  // namespace coalesce
