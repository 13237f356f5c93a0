// Conv (opsets 1 to 22) on oneDNN, and FusedConv (internal domain): the same
// with an activation the graph optimizer folded in (see
// fused_activation_attr.h). X is [N, C, spatial...] with 1 to 3 spatial dims,
// W is [M, C / group, kernel...], the optional B is [M], Y is
// [N, M, out spatial...].
//
// The int attribute "channels_last" (default 0; the layout pass sets it on
// FusedConv, and Conv accepts it too, as it does "activation") makes X
// [N, spatial..., C] and Y [N, out spatial..., M]; W and B keep their layouts.
//
// FusedConv's optional fourth input Z (the residual the optimizer folded in)
// makes Y = act(conv(X, W) + B + Z), Z broadcast as Add does: Y's shape is
// the broadcast of the convolution's and Z's. When Z broadcasts to the
// convolution's shape, Z is copied into Y (nothing to copy when the plan
// gives Y Z's memory) and oneDNN adds the convolution to it (a sum
// post-op); otherwise the convolution goes to scratch and the sum follows.
#include "kernels/cpu/conv.h"

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/conv_schema.h"
#include "kernels/cpu/broadcast_math.h"
#include "kernels/cpu/elementwise.h"
#include "onnx/onnx_pb.h"

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

// How a FusedConv adds its residual Z, decided per plan from the shapes.
struct Residual {
  enum class Mode {
    kNone,        // no Z
    kAccumulate,  // Z (broadcast) copied into Y, then the sum post-op
    kAddAfter,    // conv to scratch, then Y = act(conv + Z) broadcasting
  };
  Mode mode = Mode::kNone;
  std::vector<int64_t> conv_dims, z_dims, y_dims;
  kernels::FusedActivation activation;  // kAddAfter applies it
};

class PreparedConv : public PreparedKernel {
 public:
  PreparedConv(std::unique_ptr<kernels::ConvPrimitive> primitive,
               Residual residual)
      : primitive_(std::move(primitive)), residual_(std::move(residual)) {
    conv_offset_ = (primitive_->scratch_bytes() + 63) / 64 * 64;
  }

  size_t scratch_bytes() const override {
    if (residual_.mode != Residual::Mode::kAddAfter)
      return primitive_->scratch_bytes();
    return conv_offset_ + Count(residual_.conv_dims) * sizeof(float);
  }

  // Y may take Z's memory when Z has Y's shape and Y is written in place.
  int in_place_input() const override {
    return residual_.mode == Residual::Mode::kAccumulate &&
                   residual_.z_dims == residual_.y_dims
               ? 3
               : -1;
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    const float* bias =
        in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    float* y = out[0].as<float>();
    switch (residual_.mode) {
      case Residual::Mode::kNone:
        break;
      case Residual::Mode::kAccumulate:
        FillWithResidual(in[3].as<float>(), y);
        break;
      case Residual::Mode::kAddAfter: {
        float* conv = reinterpret_cast<float*>(scratch + conv_offset_);
        if (absl::Status s = primitive_->Run(
                in[0].as<float>(), in[1].as<float>(), bias, conv, scratch);
            !s.ok())
          return s;
        kernels::BroadcastBinary(
            kernels::BinaryOp::kAdd, static_cast<const float*>(conv),
            residual_.conv_dims, in[3].as<float>(), residual_.z_dims, y);
        kernels::ApplyFusedActivation(residual_.activation, y,
                                      Count(residual_.y_dims));
        return absl::OkStatus();
      }
    }
    return primitive_->Run(in[0].as<float>(), in[1].as<float>(), bias, y,
                           scratch);
  }

 private:
  static int64_t Count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }

  void FillWithResidual(const float* z, float* y) const {
    if (z == y) return;  // the plan placed Y on Z
    if (residual_.z_dims == residual_.y_dims) {
      std::memcpy(y, z, Count(residual_.y_dims) * sizeof(float));
    } else {
      kernels::BroadcastTo(z, residual_.z_dims, residual_.y_dims, y);
    }
  }

  std::unique_ptr<kernels::ConvPrimitive> primitive_;
  Residual residual_;
  size_t conv_offset_ = 0;  // of the kAddAfter result in scratch
};

class ConvOp : public PreparedOnlyKernel {
 public:
  // Attributes: engine/schema/conv_schema.h.
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    const ConvAttrs* attrs = node.resolved_as<ConvAttrs>();
    if (attrs == nullptr) return absl::InternalError("Conv has no schema");
    auto op = std::make_unique<ConvOp>();
    op->attrs_ = attrs->window;
    op->activation_ = ToKernelActivation(attrs->activation);
    op->channels_last_ = attrs->channels_last;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    absl::StatusOr<kernels::ConvGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    out[0].dtype = DataType::kFp32;
    out[0].shape = ConvShape(*g);
    if (!HasResidual(in)) return absl::OkStatus();
    if (absl::Status s = ExpectInputType(in, 3, DataType::kFp32); !s.ok())
      return s;
    std::optional<std::vector<int64_t>> y =
        kernels::BroadcastShapes(out[0].shape, in[3].shape);
    if (!y) {
      return absl::InvalidArgumentError(
          absl::StrCat("the residual Z ", ShapeToString(in[3].shape),
                       " does not broadcast with the convolution's result ",
                       ShapeToString(out[0].shape)));
    }
    out[0].shape = *std::move(y);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<kernels::ConvGeometry> g = Geometry(in);
    if (!g.ok()) return g.status();
    Residual residual;
    if (HasResidual(in)) {
      residual.conv_dims = ConvShape(*g);
      residual.z_dims = in[3].shape;
      residual.y_dims = out[0].shape;
      residual.activation = activation_;
      residual.mode = residual.y_dims == residual.conv_dims
                          ? Residual::Mode::kAccumulate
                          : Residual::Mode::kAddAfter;
    }
    const bool add_after = residual.mode == Residual::Mode::kAddAfter;
    const bool has_bias = in.size() > 2 && in[2].present();
    const char* weights = in[1].constant_data;
    absl::StatusOr<std::unique_ptr<kernels::ConvPrimitive>> primitive =
        kernels::ConvPrimitive::Create(
            *g, has_bias, add_after ? kernels::FusedActivation{} : activation_,
            reinterpret_cast<const float*>(weights),
            weights != nullptr ? &weights_cache_ : nullptr,
            /*accumulate=*/residual.mode == Residual::Mode::kAccumulate);
    if (!primitive.ok()) return primitive.status();
    return std::make_unique<PreparedConv>(*std::move(primitive),
                                          std::move(residual));
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

  static bool HasResidual(absl::Span<const TensorInfo> in) {
    return in.size() > 3 && in[3].present();
  }

  // The convolution's result, before any residual broadcasts it.
  Shape ConvShape(const kernels::ConvGeometry& g) const {
    Shape y = {g.batch};
    if (!channels_last_) y.push_back(g.out_channels);
    y.insert(y.end(), g.out_spatial.begin(), g.out_spatial.end());
    if (channels_last_) y.push_back(g.out_channels);
    return y;
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
