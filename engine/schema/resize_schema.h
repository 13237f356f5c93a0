// Resize (opsets 10, 11, 13, 18, 19) and the deprecated Upsample (opsets 7,
// 9), whose meaning lives here (engine/schema/op_schema.h): float tensors of
// any rank, the interpolation in kernels/cpu/resize.h (CPU) and
// kernels/cuda/resize_math.h (GPU instances).
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
#ifndef COALESCE_ENGINE_SCHEMA_RESIZE_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_RESIZE_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/neutral_plan.h"

namespace coalesce {

enum class ResizeMode { kNearest, kLinear, kCubic };

// The coordinate transformations (kernels/cpu/resize.h has the formulas).
enum class ResizeCoordinate {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};

enum class NearestRounding {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kFloor,
  kCeil
};

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinate coordinate = ResizeCoordinate::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;
  float extrapolation_value = 0.0f;
  // Which node inputs carry what (-1: none).
  int roi_input = -1;
  int scales_input = -1;
  int sizes_input = -1;
  std::vector<float> scales_attribute;  // Upsample-7
  std::vector<int64_t> axes;            // empty: every axis
  AspectPolicy policy = AspectPolicy::kStretch;
};

// One axis of the tensor: sizes, the factor the coordinate transformation
// divides by, and tf_crop_and_resize's region.
struct ResizeAxisSpec {
  int64_t in = 1;
  int64_t out = 1;
  double scale = 1.0;
  double roi_start = 0.0;
  double roi_end = 1.0;
};

// Every axis of input 0 (`data`: the inputs' memory at run time; empty when
// planning, when constant data is read).
absl::StatusOr<std::vector<ResizeAxisSpec>> ResolveResizeAxes(
    const ResizeAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_RESIZE_SCHEMA_H_
