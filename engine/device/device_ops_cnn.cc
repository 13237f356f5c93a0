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

// ConvArgs' geometry for a 1-D or 2-D convolution node, NCHW or (the
// layout pass's channels_last) NHWC.
absl::StatusOr<ConvArgs> ConvGeometry(const NodeView& v, const ConvAttrs& a) {
  const Shape& x = v.in_shape(0);
  const bool nhwc = a.channels_last;
  if (x.size() != 3 && x.size() != 4) {
    return absl::UnimplementedError(absl::StrCat(
        "input of rank ", x.size(),
        "; the GPU runs 1-D and 2-D (NCW, NCHW, NHWC) convolutions only"));
  }
  if (nhwc && x.size() != 4) {
    return absl::UnimplementedError("a channels-last convolution not 2-D");
  }
  const Shape& w = v.in_shape(1);
  const std::vector<int64_t> spatial =
      nhwc ? std::vector<int64_t>(x.begin() + 1, x.end() - 1)
           : std::vector<int64_t>(x.begin() + 2, x.end());
  // The same geometry the CPU's Conv infers with (engine/schema/); a 1-D
  // convolution (Whisper's, wav2vec's) runs as a 2-D one of height 1.
  absl::StatusOr<SpatialGeometry> resolved = ResolveConvGeometry(
      a.window, spatial, std::vector<int64_t>(w.begin() + 2, w.end()));
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
  args.c = nhwc ? x[3] : x[1];
  args.in_h = one_d ? 1 : spatial[0];
  args.in_w = spatial.back();
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
  args.groups = a.window.group;
  args.channels_last = nhwc;
  args.activation = DeviceFusedActivation(a.activation);
  return args;
}

// The weights as the convolution reads them: float16 in FP16 mode, KRSC
// when channels-last (both converted once per program), else as they are.
struct ConvWeights {
  HalfOperand half;
  int converted = -1;  // float32 KRSC
  int value = -1;      // float32 as it is
};

absl::StatusOr<ConvWeights> AddConvWeights(const NodeView& v,
                                           const ConvArgs& args,
                                           LoweredNode& lowered) {
  const Shape& w = v.in_shape(1);
  const int64_t oihw[4] = {w[0], w[1], w.size() == 4 ? w[2] : 1, w.back()};
  ConvWeights weights;
  const bool constant = v.in(1).storage == ValueStorage::kConstant &&
                        v.in(1).info.constant_data != nullptr;
  if (args.channels_last && !constant) {
    return absl::UnimplementedError(
        "channels-last convolution weights computed at run time");
  }
  const int64_t* krsc = args.channels_last ? oihw : nullptr;
  if (v.options().half()) {
    weights.half = AddHalfOperand(v, 1, lowered, krsc);
  } else if (krsc != nullptr) {
    weights.converted =
        AddConvertedConstant(v, 1, DeviceFloat::kFloat, krsc, lowered);
  } else {
    weights.value = v.in_id(1);
    lowered.reads.push_back(weights.value);
  }
  return weights;
}

absl::StatusOr<LoweredNode> LowerConv(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0, 1, 2}); !s.ok()) return s;
  absl::StatusOr<const ConvAttrs*> attrs = v.resolved<ConvAttrs>();
  if (!attrs.ok()) return attrs.status();
  absl::StatusOr<ConvArgs> geometry = ConvGeometry(v, **attrs);
  if (!geometry.ok()) return geometry.status();
  const ConvArgs args = *geometry;
  const Shape& y = v.out_shape(0);
  const int ix = v.in_id(0), iy = v.out_id(0);
  const int ib = v.has_input(2) ? v.in_id(2) : -1;
  const int iz = v.has_input(3) ? v.in_id(3) : -1;
  if (iz >= 0) {
    if (absl::Status s = v.RequireFloat({3}); !s.ok()) return s;
    if (v.in_shape(3) != y) {
      return absl::UnimplementedError(
          "a residual Z that broadcasts; the GPU adds a Z of the "
          "convolution's output shape");
    }
  }
  const bool half = v.options().half();
  const DeviceFloat half_type = v.options().activations;
  LoweredNode lowered;
  if (ib >= 0) lowered.reads.push_back(ib);
  if (iz >= 0) lowered.reads.push_back(iz);
  if (Count(y) == 0) {
    lowered.reads.push_back(ix);
    return lowered;
  }
  HalfOperand half_x;
  if (half) {
    half_x = AddHalfOperand(v, 0, lowered);
  } else {
    lowered.reads.push_back(ix);
  }
  auto weights = AddConvWeights(v, args, lowered);
  if (!weights.ok()) return weights.status();
  const DeviceFloat y_type = v.out_type(0);
  const DeviceFloat z_type = iz >= 0 ? v.in_type(3) : DeviceFloat::kFloat;
  const int y_scratch = half && y_type == DeviceFloat::kFloat
                            ? AddHalfScratch(Count(y), lowered)
                            : -1;
  lowered.steps.push_back([=, w = *weights](const StepContext& c) {
    ConvArgs a = args;
    if (half) {
      a.x = FloatIn(half_x.Address(c), half_type);
      a.w = FloatIn(w.half.Address(c), half_type);
    } else {
      a.x = F(c, ix);
      a.w = w.converted >= 0
                ? static_cast<const float*>(c.converted[w.converted])
                : F(c, w.value);
    }
    a.bias = ib >= 0 ? F(c, ib) : nullptr;
    if (iz >= 0) a.z = In(c, iz, z_type);
    a.y = Out(c, iy, y_type);
    if (y_scratch >= 0) a.y_scratch = static_cast<Half*>(c.scratch[y_scratch]);
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
  auto channels_last = v.attrs().GetInt("channels_last", 0);
  if (!channels_last.ok()) return channels_last.status();
  const bool nhwc = *channels_last != 0;
  // Spatial axes 1 and 2 of NHWC, 2 and 3 of NCHW.
  const size_t h = nhwc ? 1 : 2;
  Pool2DArgs args;
  args.channels = nhwc ? x[3] : x[1];
  args.channels_last = nhwc;
  args.planes = x[0] * args.channels;
  args.in_h = x[h];
  args.in_w = x[h + 1];
  args.out_h = y[h];
  args.out_w = y[h + 1];
  args.max = op == "MaxPool" || op == "GlobalMaxPool";
  if (global) {
    args.kernel_h = x[h];
    args.kernel_w = x[h + 1];
  } else {
    // The same windows the CPU's pools use (engine/schema/pool_schema.h).
    absl::StatusOr<const PoolAttrs*> attrs = v.resolved<PoolAttrs>();
    if (!attrs.ok()) return attrs.status();
    const PoolAttrs& a = **attrs;
    absl::StatusOr<PoolWindows> w = ResolvePoolWindows(a, {x[h], x[h + 1]});
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
  const DeviceFloat x_type = v.in_type(0), y_type = v.out_type(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  if (Count(y) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Pool2D(c.stream, args, In(c, ix, x_type),
                            Out(c, iy, y_type));
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
  const bool nhwc = (*attrs)->channels_last;
  const ActivationSpec act = DeviceFusedActivation((*attrs)->activation);
  const Shape& x = v.in_shape(0);
  const int64_t channels = x.size() > 1 ? (nhwc ? x.back() : x[1]) : 1;
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
  const int64_t spatial = x.size() > 2 ? Count(x) / (n * channels) : 1;
  const int ix = v.in_id(0), iy = v.out_id(0);
  const DeviceFloat x_type = v.in_type(0), y_type = v.out_type(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  lowered.derived = {std::move(a), std::move(shift)};
  if (n * channels * spatial == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.ChannelAffine(c.stream, {.x = In(c, ix, x_type),
                                              .scale = c.derived[0],
                                              .shift = c.derived[1],
                                              .y = Out(c, iy, y_type),
                                              .batch = n,
                                              .channels = channels,
                                              .spatial = spatial,
                                              .channels_last = nhwc,
                                              .activation = act});
  });
  return lowered;
}

}  // namespace coalesce::device_ops
