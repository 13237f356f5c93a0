// Conv (opsets 1 to 22) on oneDNN, and FusedConv (internal domain): the same
// with an activation the graph optimizer folded in (see
// fused_activation_attr.h). X is [N, C, spatial...] with 1 to 3 spatial dims,
// W is [M, C / group, kernel...], the optional B is [M].
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
    op->attrs_ = *std::move(attrs);
    op->activation_ = *act;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    absl::StatusOr<kernels::ConvGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    out[0].dtype = DataType::kFp32;
    out[0].shape = {g->batch, g->out_channels};
    out[0].shape.insert(out[0].shape.end(), g->out_spatial.begin(),
                        g->out_spatial.end());
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
    if (x[1] != w[1] * group || w[0] % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "X ", ShapeToString(x), " has ", x[1], " channels but W ",
          ShapeToString(w), " with group ", group, " expects ", w[1] * group,
          " (and output channels divisible by the group)"));
    }
    if (in.size() > 2 && in[2].present()) {
      if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
        return s;
      if (in[2].shape != Shape{w[0]}) {
        return absl::InvalidArgumentError(absl::StrCat(
            "B ", ShapeToString(in[2].shape), " must be [", w[0], "]"));
      }
    }
    absl::StatusOr<SpatialGeometry> s =
        ResolveConvGeometry(attrs_, Tail(x), Tail(w));
    if (!s.ok()) return s.status();
    return kernels::ConvGeometry{.batch = x[0],
                                 .in_channels = x[1],
                                 .out_channels = w[0],
                                 .groups = group,
                                 .in_spatial = Tail(x),
                                 .out_spatial = s->out,
                                 .kernel = s->kernel,
                                 .strides = s->strides,
                                 .dilations = s->dilations,
                                 .pads_begin = s->pads_begin,
                                 .pads_end = s->pads_end};
  }

  ConvAttributes attrs_;
  kernels::FusedActivation activation_;
  mutable kernels::ConvWeightsCache weights_cache_;
};

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  registry.Register("Conv", FactoryOf<ConvOp>());
  registry.RegisterInternal("FusedConv", FactoryOf<ConvOp>());
}

}  // namespace coalesce
