#include "engine/schema/resize_schema.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

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

// mode, and for Resize-11+ the coordinate and nearest modes.
absl::Status ParseModes(const NodeAttributes& a, bool legacy, ResizeAttrs& c) {
  absl::StatusOr<std::string> mode = a.GetString("mode", "nearest");
  if (!mode.ok()) return mode.status();
  absl::StatusOr<ResizeMode> parsed = ParseMode(*mode);
  if (!parsed.ok()) return parsed.status();
  c.mode = *parsed;
  if (legacy) {
    if (c.mode == ResizeMode::kCubic)
      return absl::InvalidArgumentError("cubic needs Resize opset 11");
    c.coordinate = ResizeCoordinate::kAsymmetric;
    c.nearest = NearestRounding::kFloor;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> coordinate =
      a.GetString("coordinate_transformation_mode", "half_pixel");
  absl::StatusOr<std::string> nearest =
      a.GetString("nearest_mode", "round_prefer_floor");
  absl::StatusOr<std::string> policy =
      a.GetString("keep_aspect_ratio_policy", "stretch");
  for (const auto* s : {&coordinate, &nearest, &policy})
    if (!s->ok()) return s->status();
  absl::StatusOr<ResizeCoordinate> c_mode = ParseCoordinate(*coordinate);
  absl::StatusOr<NearestRounding> n_mode = ParseRounding(*nearest);
  absl::StatusOr<AspectPolicy> p_mode = ParsePolicy(*policy);
  if (!c_mode.ok()) return c_mode.status();
  if (!n_mode.ok()) return n_mode.status();
  if (!p_mode.ok()) return p_mode.status();
  c.coordinate = *c_mode;
  c.nearest = *n_mode;
  c.policy = *p_mode;
  return absl::OkStatus();
}

// The numeric attributes of Resize-11+.
absl::Status ParseNumbers(const NodeAttributes& node, ResizeAttrs& c) {
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
  c.cubic_coeff_a = *a;
  c.extrapolation_value = *extrapolation;
  c.exclude_outside = *exclude != 0;
  c.antialias = *antialias != 0;
  c.axes = *std::move(axes);
  return absl::OkStatus();
}

absl::StatusOr<ResizeAttrs> ResolveResize(const SchemaNode& node,
                                          bool upsample) {
  ResizeAttrs c;
  const bool legacy = upsample || node.opset < 11;
  if (absl::Status s = ParseModes(node.attributes, legacy, c); !s.ok())
    return s;
  if (upsample && node.opset < 9) {
    absl::StatusOr<std::vector<float>> scales =
        node.attributes.GetFloats("scales");
    if (!scales.ok()) return scales.status();
    if (scales->empty())
      return absl::InvalidArgumentError(
          "Upsample-7 needs the scales attribute");
    c.scales_attribute = *std::move(scales);
  } else if (legacy) {
    c.scales_input = 1;
  } else {
    if (absl::Status s = ParseNumbers(node.attributes, c); !s.ok()) return s;
    c.roi_input = 1;
    c.scales_input = 2;
    c.sizes_input = 3;
  }
  return c;
}

absl::Status InferResize(const ResizeAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  absl::StatusOr<std::vector<ResizeAxisSpec>> axes =
      ResolveResizeAxes(attrs, in, {});
  if (!axes.ok()) return axes.status();
  Shape shape;
  for (const ResizeAxisSpec& a : *axes) shape.push_back(a.out);
  out[0] = {DataType::kFp32, std::move(shape), nullptr};
  return absl::OkStatus();
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

// The resized axes, in order; every axis of the input when `axes` is empty.
absl::StatusOr<std::vector<int64_t>> ListedAxes(const ResizeAttrs& attrs,
                                                int64_t rank) {
  std::vector<int64_t> axes;
  std::vector<bool> seen(rank, false);
  for (int64_t a : attrs.axes) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(a, rank);
    if (!axis.ok()) return axis.status();
    if (seen[*axis])
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " repeats"));
    seen[*axis] = true;
    axes.push_back(*axis);
  }
  if (attrs.axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  return axes;
}

// The largest axis a scale may produce (2^53: exact in a double).
constexpr double kMaxResizedDim = 9007199254740992.0;

absl::Status ApplyScales(const std::vector<int64_t>& listed,
                         const std::vector<float>& scales,
                         std::vector<ResizeAxisSpec>& axes) {
  if (scales.size() != listed.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scales has ", scales.size(), " values for ", listed.size(), " axes"));
  }
  for (size_t i = 0; i < listed.size(); ++i) {
    if (!(scales[i] > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("scale ", scales[i], " is not positive"));
    }
    ResizeAxisSpec& a = axes[listed[i]];
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

absl::Status ApplySizes(const ResizeAttrs& attrs,
                        const std::vector<int64_t>& listed,
                        const std::vector<int64_t>& sizes,
                        std::vector<ResizeAxisSpec>& axes) {
  if (sizes.size() != listed.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sizes has ", sizes.size(), " values for ", listed.size(), " axes"));
  }
  double low = 0.0, high = 0.0;
  for (size_t i = 0; i < listed.size(); ++i) {
    ResizeAxisSpec& a = axes[listed[i]];
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
  if (attrs.policy == AspectPolicy::kStretch) return absl::OkStatus();
  const double scale = attrs.policy == AspectPolicy::kNotLarger ? low : high;
  for (int64_t axis : listed) {
    ResizeAxisSpec& a = axes[axis];
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
absl::Status ApplyRoi(const ResizeAttrs& attrs, absl::Span<const TensorInfo> in,
                      const std::vector<const char*>& data,
                      const std::vector<int64_t>& listed,
                      std::vector<ResizeAxisSpec>& axes) {
  absl::StatusOr<std::vector<float>> roi =
      ReadFloats(in, data, attrs.roi_input, "the roi input");
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

}  // namespace

absl::StatusOr<std::vector<ResizeAxisSpec>> ResolveResizeAxes(
    const ResizeAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data) {
  const Shape& x = in[0].shape;
  absl::StatusOr<std::vector<int64_t>> listed = ListedAxes(attrs, x.size());
  if (!listed.ok()) return listed.status();
  std::vector<ResizeAxisSpec> axes(x.size());
  for (size_t a = 0; a < x.size(); ++a) axes[a].in = axes[a].out = x[a];
  absl::StatusOr<std::vector<float>> scales =
      attrs.scales_attribute.empty()
          ? ReadFloats(in, data, attrs.scales_input, "the scales input")
          : absl::StatusOr<std::vector<float>>(attrs.scales_attribute);
  absl::StatusOr<std::vector<int64_t>> sizes =
      ReadSizes(in, data, attrs.sizes_input);
  if (!scales.ok()) return scales.status();
  if (!sizes.ok()) return sizes.status();
  if (scales->empty() == sizes->empty()) {
    return absl::InvalidArgumentError(
        "exactly one of the scales and sizes inputs must be given");
  }
  absl::Status s = scales->empty() ? ApplySizes(attrs, *listed, *sizes, axes)
                                   : ApplyScales(*listed, *scales, axes);
  if (!s.ok()) return s;
  if (attrs.coordinate == ResizeCoordinate::kTfCropAndResize) {
    if (absl::Status r = ApplyRoi(attrs, in, data, *listed, axes); !r.ok())
      return r;
  }
  return axes;
}

void RegisterResizeSchemas(SchemaRegistry& registry) {
  for (bool upsample : {false, true}) {
    registry.Register(upsample ? "Upsample" : "Resize",
                      std::make_shared<FunctionSchema<ResizeAttrs>>(
                          [upsample](const SchemaNode& node) {
                            return ResolveResize(node, upsample);
                          },
                          &InferResize));
  }
}

}  // namespace coalesce
