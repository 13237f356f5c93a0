// The CNN family of the device registry (device_ops.h): 1-D and 2-D Conv
// and FusedConv (attributes and geometry from engine/schema/conv_schema.h),
// max/average/global pooling (windows from engine/schema/pool_schema.h),
// LRN and BatchNormalization at inference (as a per-channel affine map with
// constants computed here).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/conv_schema.h"
#include "engine/schema/normalization_schema.h"
#include "engine/schema/pool_schema.h"

namespace coalesce::device_ops {
namespace {

absl::Status Require2D(const NodeView& v) {
  if (v.in_shape(0).size() != 4) {
    return absl::UnimplementedError(absl::StrCat(
        "input of rank ", v.in_shape(0).size(),
        "; the GPU runs 2-D (NCHW) convolutions and pooling only"));
  }
  return absl::OkStatus();
}

}  // namespace

// A geometry of one spatial axis as the 2-D one of height 1 it equals.
SpatialGeometry AsTwoDimensional(SpatialGeometry g) {
  if (g.kernel.size() != 1) return g;
  for (std::vector<int64_t>* axis :
       {&g.kernel, &g.strides, &g.dilations, &g.out}) {
    axis->insert(axis->begin(), 1);
  }
  g.pads_begin.insert(g.pads_begin.begin(), 0);
  g.pads_end.insert(g.pads_end.begin(), 0);
  return g;
}

absl::StatusOr<LoweredNode> LowerConv(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0, 1, 2}); !s.ok()) return s;
  const Shape& x = v.in_shape(0);
  if (x.size() != 3 && x.size() != 4) {
    return absl::UnimplementedError(absl::StrCat(
        "input of rank ", x.size(),
        "; the GPU runs 1-D and 2-D (NCW, NCHW) convolutions only"));
  }
  absl::StatusOr<const ConvAttrs*> attrs = v.resolved<ConvAttrs>();
  if (!attrs.ok()) return attrs.status();
  const Shape& w = v.in_shape(1);
  const Shape& y = v.out_shape(0);
  // The same geometry the CPU's Conv infers with (engine/schema/); a 1-D
  // convolution (Whisper's, wav2vec's) runs as a 2-D one of height 1.
  absl::StatusOr<SpatialGeometry> resolved = ResolveConvGeometry(
      (*attrs)->window, std::vector<int64_t>(x.begin() + 2, x.end()),
      std::vector<int64_t>(w.begin() + 2, w.end()));
  if (!resolved.ok()) return resolved.status();
  const SpatialGeometry g = AsTwoDimensional(*std::move(resolved));
  for (size_t i = 0; i < 2; ++i) {
    if (g.pads_begin[i] != g.pads_end[i]) {
      return absl::UnimplementedError(
          "asymmetric padding; the GPU's convolutions pad both ends alike");
    }
  }
  const bool one_d = x.size() == 3;
  ConvArgs args;
  args.n = x[0];
  args.c = x[1];
  args.in_h = one_d ? 1 : x[2];
  args.in_w = x.back();
  args.m = w[0];
  args.kernel_h = g.kernel[0];
  args.kernel_w = g.kernel[1];
  args.out_h = g.out[0];
  args.out_w = g.out[1];
  args.stride_h = g.strides[0];
  args.stride_w = g.strides[1];
  args.pad_top = g.pads_begin[0];
  args.pad_left = g.pads_begin[1];
  args.dilation_h = g.dilations[0];
  args.dilation_w = g.dilations[1];
  args.groups = (*attrs)->window.group;
  args.activation = DeviceFusedActivation((*attrs)->activation);
  const int ix = v.in_id(0), iw = v.in_id(1), iy = v.out_id(0);
  const int ib = v.has_input(2) ? v.in_id(2) : -1;
  const int iz = v.has_input(3) ? v.in_id(3) : -1;
  if (iz >= 0) {
    if (absl::Status s = v.RequireFloat({3}); !s.ok()) return s;
    if (v.in_shape(3) != y || y[0] != x[0] || y[1] != w[0]) {
      return absl::UnimplementedError(
          "a residual Z that broadcasts; the GPU adds a Z of the "
          "convolution's output shape");
    }
  }
  const bool fp16 = v.options().fp16;
  LoweredNode lowered;
  if (ib >= 0) lowered.reads.push_back(ib);
  if (iz >= 0) lowered.reads.push_back(iz);
  if (!fp16 || Count(y) == 0) {
    lowered.reads.push_back(ix);
    lowered.reads.push_back(iw);
    if (Count(y) == 0) return lowered;
  }
  HalfOperand half_x, half_w;
  int half_y = -1;
  if (fp16) {
    half_x = AddHalfOperand(v, 0, lowered);
    half_w = AddHalfOperand(v, 1, lowered);
    half_y = AddHalfScratch(Count(y), lowered);
  }
  lowered.steps.push_back([=](const StepContext& c) {
    ConvArgs a = args;
    if (fp16) {
      a.x_half = half_x.Address(c);
      a.w_half = half_w.Address(c);
      a.y_half = static_cast<Half*>(c.scratch[half_y]);
    } else {
      a.x = F(c, ix);
      a.w = F(c, iw);
    }
    a.bias = ib >= 0 ? F(c, ib) : nullptr;
    a.z = iz >= 0 ? F(c, iz) : nullptr;
    a.y = F(c, iy);
    return c.kernels.Conv2D(c.stream, a);
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerPool(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  if (absl::Status s = Require2D(v); !s.ok()) return s;
  if (v.node().outputs.size() > 1 && v.node().outputs[1] >= 0) {
    return absl::UnimplementedError("MaxPool's Indices output");
  }
  const std::string& op = *v.node().op_type;
  const Shape& x = v.in_shape(0);
  const Shape& y = v.out_shape(0);
  const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
  Pool2DArgs args;
  args.planes = x[0] * x[1];
  args.in_h = x[2];
  args.in_w = x[3];
  args.out_h = y[2];
  args.out_w = y[3];
  args.max = op == "MaxPool" || op == "GlobalMaxPool";
  if (global) {
    args.kernel_h = x[2];
    args.kernel_w = x[3];
  } else {
    // The same windows the CPU's pools use (engine/schema/pool_schema.h).
    absl::StatusOr<const PoolAttrs*> attrs = v.resolved<PoolAttrs>();
    if (!attrs.ok()) return attrs.status();
    const PoolAttrs& a = **attrs;
    absl::StatusOr<PoolWindows> w = ResolvePoolWindows(a, {x[2], x[3]});
    if (!w.ok()) return w.status();
    args.kernel_h = a.kernel[0];
    args.kernel_w = a.kernel[1];
    args.stride_h = a.strides[0];
    args.stride_w = a.strides[1];
    args.dilation_h = a.dilations[0];
    args.dilation_w = a.dilations[1];
    args.pad_top = w->pads_begin[0];
    args.pad_bottom = w->pads_end[0];
    args.pad_left = w->pads_begin[1];
    args.pad_right = w->pads_end[1];
    args.count_include_pad = a.count_include_pad;
  }
  const int ix = v.in_id(0), iy = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  if (Count(y) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Pool2D(c.stream, args, F(c, ix), F(c, iy));
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerLrn(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  const Shape& x = v.in_shape(0);
  if (x.size() < 2) return absl::InvalidArgumentError("LRN needs [N, C, ...]");
  auto attrs = v.resolved<LrnAttrs>();
  if (!attrs.ok()) return attrs.status();
  const LrnAttrs p = **attrs;
  const int64_t n = x[0], channels = x[1], spatial = Product(x, 2, x.size());
  const int ix = v.in_id(0), iy = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  if (n * channels * spatial == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Lrn(c.stream, {.x = F(c, ix),
                                    .y = F(c, iy),
                                    .batch = n,
                                    .channels = channels,
                                    .spatial = spatial,
                                    .size = p.size,
                                    .alpha = p.alpha,
                                    .beta = p.beta,
                                    .bias = p.bias});
  });
  return lowered;
}

// y = (x - mean) / sqrt(var + epsilon) * scale + b, as x * a[c] + s[c]
// with a = scale / sqrt(var + epsilon), s = b - mean * a computed here
// (in double) from the node's constant inputs.
absl::StatusOr<LoweredNode> LowerBatchNorm(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0, 1, 2, 3, 4}); !s.ok()) return s;
  auto attrs = v.resolved<BatchNormAttrs>();
  if (!attrs.ok()) return attrs.status();
  const double epsilon = (*attrs)->epsilon;
  const Shape& x = v.in_shape(0);
  const int64_t channels = x.size() > 1 ? x[1] : 1;
  const float* params[4];
  for (int i = 1; i <= 4; ++i) {
    const TensorInfo& info = v.in(i).info;
    if (info.constant_data == nullptr || Count(info.shape) != channels) {
      return absl::UnimplementedError(absl::StrCat(
          "input ", i, " must be a constant of one value per channel"));
    }
    params[i - 1] = reinterpret_cast<const float*>(info.constant_data);
  }
  std::vector<float> a(channels), shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double inv = 1.0 / std::sqrt(double{params[3][c]} + epsilon);
    a[c] = static_cast<float>(params[0][c] * inv);
    shift[c] =
        static_cast<float>(params[1][c] - params[2][c] * params[0][c] * inv);
  }
  const int64_t n = x.empty() ? 1 : x[0];
  const int64_t spatial = x.size() > 2 ? Product(x, 2, x.size()) : 1;
  const int ix = v.in_id(0), iy = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  lowered.derived = {std::move(a), std::move(shift)};
  if (n * channels * spatial == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.ChannelAffine(c.stream, {.x = F(c, ix),
                                              .scale = c.derived[0],
                                              .shift = c.derived[1],
                                              .y = F(c, iy),
                                              .batch = n,
                                              .channels = channels,
                                              .spatial = spatial,
                                              .activation = ActivationSpec{}});
  });
  return lowered;
}

}  // namespace coalesce::device_ops
