// Conv and FusedConv (internal domain: plus the optimizer's activation,
// residual input Z and "channels_last" layout), and the window attributes
// Conv and ConvTranspose share (auto_pad, dilations, group, kernel_shape,
// pads, strides), resolved and checked once per node, with Conv's
// output-size rule (ResolveConvGeometry), which the CPU kernel and the
// device lowering both use. Conv's inference is still the CPU kernel's
// (engine/ops/conv.cc: the residual's broadcast).
#ifndef COALESCE_ENGINE_SCHEMA_CONV_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_CONV_SCHEMA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/neutral_plan.h"
#include "engine/schema/activation_schema.h"

namespace coalesce {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// "NOTSET" (or empty), "SAME_UPPER", "SAME_LOWER", "VALID"; InvalidArgument
// for anything else.
absl::StatusOr<AutoPad> ResolveAutoPad(const std::string& value);

struct ConvAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  // Empty when absent; filled per spatial rank by Resolve.
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
};

// The spatial geometry of one convolution once the input is known.
struct SpatialGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, out;
};

// Conv and FusedConv: the window, the fused activation and the layout.
struct ConvAttrs {
  ConvAttributes window;
  FusedActivationAttr activation;
  bool channels_last = false;  // X and Y are [N, spatial..., C]
};

// The window attributes; InvalidArgument for a bad auto_pad or group.
absl::StatusOr<ConvAttributes> ResolveConvAttributes(
    const NodeAttributes& attributes);

// Conv's geometry for `in_spatial` with the weights' kernel dims
// `weight_kernel`: defaults (stride 1, dilation 1, pads 0), auto_pad, and
// out = floor((in + pads - dilated kernel) / stride) + 1. InvalidArgument when
// an attribute's length or value does not fit or an output dim is below 1.
absl::StatusOr<SpatialGeometry> ResolveConvGeometry(
    const ConvAttributes& attrs, const std::vector<int64_t>& in_spatial,
    const std::vector<int64_t>& weight_kernel);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_CONV_SCHEMA_H_
