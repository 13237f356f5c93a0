// Resize (opsets 10, 11, 13, 18, 19) and the deprecated Upsample (opsets 7,
// 9) on float tensors of any rank; see kernels/cpu/resize.h for the
// interpolation.
//
// Inputs: Resize-10 and Upsample-9 take (X, scales); Resize-11+ takes
// (X, roi, scales, sizes), roi and scales optional from 13; Upsample-7 has a
// `scales` attribute. Exactly one of scales and sizes must be non-empty, and
// it (and roi, for tf_crop_and_resize) must be known when planning. With
// scales, out = floor(in * scale); with sizes and keep_aspect_ratio_policy
// (opset 18) "stretch", out = sizes and scale = out / in; "not_larger" /
// "not_smaller" use the min / max of those scales on every resized axis and
// out = round_half_up(in * scale). `axes` (opset 18) names the axes that
// roi, scales and sizes list; other axes keep their size.
//
// Attributes: mode (nearest, linear, cubic), coordinate_transformation_mode
// (default half_pixel), nearest_mode (round_prefer_floor), cubic_coeff_a,
// exclude_outside, extrapolation_value, antialias (18). Resize-10 and
// Upsample map coordinates asymmetrically and pick nearest by floor.
#include "kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

using kernels::NearestRounding;
using kernels::ResizeCoordinate;
using kernels::ResizeMode;

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// `value` looked up in `names`; InvalidArgument naming the attribute else.
template <typename T>
absl::StatusOr<T> Lookup(
    const std::string& attribute, const std::string& value,
    std::initializer_list<std::pair<const char*, T>> names) {
  for (const auto& [name, v] : names)
    if (value == name) return v;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported ", attribute, " '", value, "'"));
}

absl::StatusOr<ResizeMode> ParseMode(const std::string& mode) {
  return Lookup<ResizeMode>("mode", mode,
                            {{"nearest", ResizeMode::kNearest},
                             {"linear", ResizeMode::kLinear},
                             {"bilinear", ResizeMode::kLinear},
                             {"cubic", ResizeMode::kCubic}});
}

absl::StatusOr<ResizeCoordinate> ParseCoordinate(const std::string& mode) {
  return Lookup<ResizeCoordinate>(
      "coordinate_transformation_mode", mode,
      {{"half_pixel", ResizeCoordinate::kHalfPixel},
       {"half_pixel_symmetric", ResizeCoordinate::kHalfPixelSymmetric},
       {"pytorch_half_pixel", ResizeCoordinate::kPytorchHalfPixel},
       {"align_corners", ResizeCoordinate::kAlignCorners},
       {"asymmetric", ResizeCoordinate::kAsymmetric},
       {"tf_half_pixel_for_nn", ResizeCoordinate::kTfHalfPixelForNn},
       {"tf_crop_and_resize", ResizeCoordinate::kTfCropAndResize}});
}

absl::StatusOr<NearestRounding> ParseRounding(const std::string& mode) {
  return Lookup<NearestRounding>(
      "nearest_mode", mode,
      {{"round_prefer_floor", NearestRounding::kRoundPreferFloor},
       {"round_prefer_ceil", NearestRounding::kRoundPreferCeil},
       {"floor", NearestRounding::kFloor},
       {"ceil", NearestRounding::kCeil}});
}

absl::StatusOr<AspectPolicy> ParsePolicy(const std::string& policy) {
  return Lookup<AspectPolicy>("keep_aspect_ratio_policy", policy,
                              {{"stretch", AspectPolicy::kStretch},
                               {"not_larger", AspectPolicy::kNotLarger},
                               {"not_smaller", AspectPolicy::kNotSmaller}});
}

// Which node inputs carry what, and the node's attributes.
struct ResizeConfig {
  kernels::ResizeOptions options;
  int roi_input = -1;
  int scales_input = -1;
  int sizes_input = -1;
  std::vector<float> scales_attribute;  // Upsample-7
  std::vector<int64_t> axes;            // empty: every axis
  AspectPolicy policy = AspectPolicy::kStretch;
};

// mode, and for Resize-11+ the coordinate and nearest modes.
absl::Status ParseModes(const OpNode& node, bool legacy, ResizeConfig& c) {
  absl::StatusOr<std::string> mode = node.GetString("mode", "nearest");
  if (!mode.ok()) return mode.status();
  absl::StatusOr<ResizeMode> parsed = ParseMode(*mode);
  if (!parsed.ok()) return parsed.status();
  c.options.mode = *parsed;
  if (legacy) {
    if (c.options.mode == ResizeMode::kCubic)
      return absl::InvalidArgumentError("cubic needs Resize opset 11");
    c.options.coordinate = ResizeCoordinate::kAsymmetric;
    c.options.nearest = NearestRounding::kFloor;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> coordinate =
      node.GetString("coordinate_transformation_mode", "half_pixel");
  absl::StatusOr<std::string> nearest =
      node.GetString("nearest_mode", "round_prefer_floor");
  absl::StatusOr<std::string> policy =
      node.GetString("keep_aspect_ratio_policy", "stretch");
  for (const auto* s : {&coordinate, &nearest, &policy})
    if (!s->ok()) return s->status();
  absl::StatusOr<ResizeCoordinate> c_mode = ParseCoordinate(*coordinate);
  absl::StatusOr<NearestRounding> n_mode = ParseRounding(*nearest);
  absl::StatusOr<AspectPolicy> p_mode = ParsePolicy(*policy);
  if (!c_mode.ok()) return c_mode.status();
  if (!n_mode.ok()) return n_mode.status();
  if (!p_mode.ok()) return p_mode.status();
  c.options.coordinate = *c_mode;
  c.options.nearest = *n_mode;
  c.policy = *p_mode;
  return absl::OkStatus();
}

// The numeric attributes of Resize-11+.
absl::Status ParseNumbers(const OpNode& node, ResizeConfig& c) {
  absl::StatusOr<float> a = node.GetFloat("cubic_coeff_a", -0.75f);
  absl::StatusOr<float> extrapolation =
      node.GetFloat("extrapolation_value", 0.0f);
  absl::StatusOr<int64_t> exclude = node.GetInt("exclude_outside", 0);
  absl::StatusOr<int64_t> antialias = node.GetInt("antialias", 0);
  absl::StatusOr<std::vector<int64_t>> axes = node.GetInts("axes");
  if (!a.ok()) return a.status();
  if (!extrapolation.ok()) return extrapolation.status();
  if (!exclude.ok()) return exclude.status();
  if (!antialias.ok()) return antialias.status();
  if (!axes.ok()) return axes.status();
  c.options.cubic_coeff_a = *a;
  c.options.extrapolation_value = *extrapolation;
  c.options.exclude_outside = *exclude != 0;
  c.options.antialias = *antialias != 0;
  c.axes = *std::move(axes);
  return absl::OkStatus();
}

absl::Status ParseUpsampleScales(const OpNode& node, ResizeConfig& c) {
  for (const onnx::AttributeProto& attr : node.proto().attribute()) {
    if (attr.name() != "scales") continue;
    if (attr.type() != onnx::AttributeProto::FLOATS)
      return absl::InvalidArgumentError("attribute 'scales' must be FLOATS");
    c.scales_attribute.assign(attr.floats().begin(), attr.floats().end());
  }
  if (c.scales_attribute.empty())
    return absl::InvalidArgumentError("Upsample-7 needs the scales attribute");
  return absl::OkStatus();
}

absl::StatusOr<ResizeConfig> ParseConfig(const OpNode& node, bool upsample) {
  ResizeConfig c;
  const bool legacy = upsample || node.opset() < 11;
  if (absl::Status s = ParseModes(node, legacy, c); !s.ok()) return s;
  if (upsample && node.opset() < 9) {
    if (absl::Status s = ParseUpsampleScales(node, c); !s.ok()) return s;
  } else if (legacy) {
    c.scales_input = 1;
  } else {
    if (absl::Status s = ParseNumbers(node, c); !s.ok()) return s;
    c.roi_input = 1;
    c.scales_input = 2;
    c.sizes_input = 3;
  }
  return c;
}

// The values of a float32 input of rank 0 or 1, known when planning (from
// `data` in Run, else constant_data). Empty when absent or of zero length.
absl::StatusOr<std::vector<float>> ReadFloats(
    absl::Span<const TensorInfo> in, const std::vector<const char*>& data,
    int i, const char* what) {
  if (i < 0 || i >= static_cast<int>(in.size()) || !in[i].present())
    return std::vector<float>{};
  const TensorInfo& info = in[i];
  if (info.dtype != DataType::kFp32 || info.shape.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a 1-D float32 tensor"));
  }
  const int64_t n = info.shape.empty() ? 1 : info.shape[0];
  if (n == 0) return std::vector<float>{};
  const char* bytes = data.empty() ? info.constant_data : data[i];
  if (bytes == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        " must be known when planning (an initializer, a Constant, or "
        "computed from shapes)"));
  }
  const float* v = reinterpret_cast<const float*>(bytes);
  return std::vector<float>(v, v + n);
}

absl::StatusOr<std::vector<int64_t>> ReadSizes(
    absl::Span<const TensorInfo> in, const std::vector<const char*>& data,
    int i) {
  if (i < 0 || i >= static_cast<int>(in.size()) || !in[i].present())
    return std::vector<int64_t>{};
  if (in[i].shape.size() == 1 && in[i].shape[0] == 0)
    return std::vector<int64_t>{};
  return ReadInts(in[i], data.empty() ? nullptr : data[i], "the sizes input");
}

// Resize for one plan's shapes: the kernel's taps built once, so that Run
// allocates nothing.
class PreparedResize : public PreparedKernel {
 public:
  explicit PreparedResize(kernels::ResizePlan plan) : plan_(std::move(plan)) {}

  size_t scratch_bytes() const override { return plan_.scratch_bytes(); }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    plan_.Run(in[0].as<float>(), out[0].as<float>(), scratch);
    return absl::OkStatus();
  }

 private:
  kernels::ResizePlan plan_;
};

class ResizeOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          bool upsample) {
    absl::StatusOr<ResizeConfig> config = ParseConfig(node, upsample);
    if (!config.ok()) return config.status();
    return std::make_unique<ResizeOp>(*std::move(config));
  }

  explicit ResizeOp(ResizeConfig config) : config_(std::move(config)) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    absl::StatusOr<std::vector<kernels::ResizeAxis>> axes = Resolve(in, {});
    if (!axes.ok()) return axes.status();
    Shape shape;
    for (const kernels::ResizeAxis& a : *axes) shape.push_back(a.out);
    out[0] = {DataType::kFp32, std::move(shape), nullptr};
    return absl::OkStatus();
  }

  // Scales, sizes and roi are known when planning, so the taps are too.
  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<std::vector<kernels::ResizeAxis>> axes = Resolve(in, {});
    if (!axes.ok()) return axes.status();
    return std::make_unique<PreparedResize>(
        kernels::ResizePlan(*axes, config_.options));
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<std::vector<kernels::ResizeAxis>> axes = Resolve(info, data);
    if (!axes.ok()) return axes.status();
    kernels::Resize(in[0].as<float>(), *axes, config_.options,
                    out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  // The resized axes, in order; every axis of the input when `axes` is empty.
  absl::StatusOr<std::vector<int64_t>> ListedAxes(int64_t rank) const {
    std::vector<int64_t> axes;
    std::vector<bool> seen(rank, false);
    for (int64_t a : config_.axes) {
      absl::StatusOr<int64_t> axis = NormalizeAxis(a, rank);
      if (!axis.ok()) return axis.status();
      if (seen[*axis])
        return absl::InvalidArgumentError(absl::StrCat("axis ", a, " repeats"));
      seen[*axis] = true;
      axes.push_back(*axis);
    }
    if (config_.axes.empty())
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }

  absl::StatusOr<std::vector<kernels::ResizeAxis>> Resolve(
      absl::Span<const TensorInfo> in,
      const std::vector<const char*>& data) const {
    const Shape& x = in[0].shape;
    absl::StatusOr<std::vector<int64_t>> listed = ListedAxes(x.size());
    if (!listed.ok()) return listed.status();
    std::vector<kernels::ResizeAxis> axes(x.size());
    for (size_t a = 0; a < x.size(); ++a) axes[a].in = axes[a].out = x[a];
    absl::StatusOr<std::vector<float>> scales =
        config_.scales_attribute.empty()
            ? ReadFloats(in, data, config_.scales_input, "the scales input")
            : absl::StatusOr<std::vector<float>>(config_.scales_attribute);
    absl::StatusOr<std::vector<int64_t>> sizes =
        ReadSizes(in, data, config_.sizes_input);
    if (!scales.ok()) return scales.status();
    if (!sizes.ok()) return sizes.status();
    if (scales->empty() == sizes->empty()) {
      return absl::InvalidArgumentError(
          "exactly one of the scales and sizes inputs must be given");
    }
    absl::Status s = scales->empty() ? ApplySizes(*listed, *sizes, axes)
                                     : ApplyScales(*listed, *scales, axes);
    if (!s.ok()) return s;
    if (config_.options.coordinate == ResizeCoordinate::kTfCropAndResize) {
      if (absl::Status r = ApplyRoi(in, data, *listed, axes); !r.ok()) return r;
    }
    return axes;
  }

  // The largest axis a scale may produce (2^53: exact in a double).
  static constexpr double kMaxResizedDim = 9007199254740992.0;

  static absl::Status ApplyScales(const std::vector<int64_t>& listed,
                                  const std::vector<float>& scales,
                                  std::vector<kernels::ResizeAxis>& axes) {
    if (scales.size() != listed.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scales has ", scales.size(), " values for ",
                       listed.size(), " axes"));
    }
    for (size_t i = 0; i < listed.size(); ++i) {
      if (!(scales[i] > 0.0f)) {
        return absl::InvalidArgumentError(
            absl::StrCat("scale ", scales[i], " is not positive"));
      }
      kernels::ResizeAxis& a = axes[listed[i]];
      a.scale = scales[i];
      // In double: a float product can overflow, and int64 cannot hold it.
      const double out = std::floor(static_cast<double>(a.scale) * a.in);
      if (!(out <= kMaxResizedDim)) {
        return absl::InvalidArgumentError(
            absl::StrCat("scale ", scales[i], " makes axis ", listed[i],
                         " of size ", a.in, " too large"));
      }
      a.out = static_cast<int64_t>(out);
    }
    return absl::OkStatus();
  }

  absl::Status ApplySizes(const std::vector<int64_t>& listed,
                          const std::vector<int64_t>& sizes,
                          std::vector<kernels::ResizeAxis>& axes) const {
    if (sizes.size() != listed.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sizes has ", sizes.size(), " values for ", listed.size(), " axes"));
    }
    double low = 0.0, high = 0.0;
    for (size_t i = 0; i < listed.size(); ++i) {
      kernels::ResizeAxis& a = axes[listed[i]];
      if (sizes[i] < 0 || (a.in == 0 && sizes[i] > 0)) {
        return absl::InvalidArgumentError(absl::StrCat("cannot resize axis ",
                                                       listed[i], " of size ",
                                                       a.in, " to ", sizes[i]));
      }
      a.out = sizes[i];
      a.scale = a.in == 0 ? 1.0 : static_cast<double>(a.out) / a.in;
      low = i == 0 ? a.scale : std::min(low, a.scale);
      high = i == 0 ? a.scale : std::max(high, a.scale);
    }
    if (config_.policy == AspectPolicy::kStretch) return absl::OkStatus();
    const double scale =
        config_.policy == AspectPolicy::kNotLarger ? low : high;
    for (int64_t axis : listed) {
      kernels::ResizeAxis& a = axes[axis];
      a.scale = scale;
      const double out = scale * a.in + 0.5;
      if (!(out <= kMaxResizedDim)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "keeping the aspect ratio makes axis ", axis, " too large"));
      }
      a.out = static_cast<int64_t>(out);
    }
    return absl::OkStatus();
  }

  // roi lists [starts..., ends...] of the listed axes.
  absl::Status ApplyRoi(absl::Span<const TensorInfo> in,
                        const std::vector<const char*>& data,
                        const std::vector<int64_t>& listed,
                        std::vector<kernels::ResizeAxis>& axes) const {
    absl::StatusOr<std::vector<float>> roi =
        ReadFloats(in, data, config_.roi_input, "the roi input");
    if (!roi.ok()) return roi.status();
    if (roi->size() != 2 * listed.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tf_crop_and_resize needs a roi of ", 2 * listed.size(),
                       " values, got ", roi->size()));
    }
    for (size_t i = 0; i < listed.size(); ++i) {
      axes[listed[i]].roi_start = (*roi)[i];
      axes[listed[i]].roi_end = (*roi)[i + listed.size()];
    }
    return absl::OkStatus();
  }

  ResizeConfig config_;
};

OpFactory ResizeFactory(bool upsample) {
  return [upsample](const OpNode& node) {
    return ResizeOp::Create(node, upsample);
  };
}

}  // namespace

void RegisterResizeOps(OpRegistry& registry) {
  registry.Register("Resize", ResizeFactory(/*upsample=*/false));
  registry.Register("Upsample", ResizeFactory(/*upsample=*/true));
}

}  // namespace coalesce
