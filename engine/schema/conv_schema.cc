#include "engine/schema/conv_schema.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"
#include "engine/schema/window_limits.h"

namespace coalesce {
namespace {}  // namespace

absl::StatusOr<AutoPad> ResolveAutoPad(const std::string& value) {
  if (value.empty() || value == "NOTSET") return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  return absl::InvalidArgumentError(
      absl::StrCat("auto_pad '", value, "' is not one of NOTSET, SAME_UPPER, ",
                   "SAME_LOWER, VALID"));
}

namespace {

// `values` with `fill` repeated `rank` times when empty; InvalidArgument when
// its length is not `rank` (or, for pads, 2 * rank).
absl::StatusOr<std::vector<int64_t>> PerAxis(const std::vector<int64_t>& values,
                                             size_t rank, int64_t fill,
                                             const char* name) {
  if (values.empty()) return std::vector<int64_t>(rank, fill);
  if (values.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " has ", values.size(), " values [", absl::StrJoin(values, ","),
        "] for ", rank, " spatial dims"));
  }
  for (int64_t v : values) {
    if (v < (fill == 0 ? 0 : 1) || v > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " [", absl::StrJoin(values, ","), "] has an invalid value"));
    }
  }
  return values;
}

}  // namespace

absl::StatusOr<ConvAttributes> ResolveConvAttributes(
    const NodeAttributes& node) {
  ConvAttributes attrs;
  absl::StatusOr<std::string> auto_pad = node.GetString("auto_pad", "");
  if (!auto_pad.ok()) return auto_pad.status();
  absl::StatusOr<AutoPad> parsed = ResolveAutoPad(*auto_pad);
  if (!parsed.ok()) return parsed.status();
  attrs.auto_pad = *parsed;
  absl::StatusOr<int64_t> group = node.GetInt("group", 1);
  if (!group.ok()) return group.status();
  if (*group < 1 || *group > kMaxWindowAttribute) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group must be in [1, ", kMaxWindowAttribute, "], got ", *group));
  }
  attrs.group = *group;
  for (auto [name, field] : {std::pair{"kernel_shape", &attrs.kernel_shape},
                             std::pair{"strides", &attrs.strides},
                             std::pair{"dilations", &attrs.dilations},
                             std::pair{"pads", &attrs.pads}}) {
    absl::StatusOr<std::vector<int64_t>> values = node.GetInts(name);
    if (!values.ok()) return values.status();
    *field = *std::move(values);
  }
  return attrs;
}

absl::StatusOr<SpatialGeometry> ResolveConvGeometry(
    const ConvAttributes& attrs, const std::vector<int64_t>& in_spatial,
    const std::vector<int64_t>& weight_kernel) {
  const size_t rank = in_spatial.size();
  SpatialGeometry g;
  g.kernel = attrs.kernel_shape.empty() ? weight_kernel : attrs.kernel_shape;
  for (int64_t k : weight_kernel) {
    if (k < 1 || k > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel [", absl::StrJoin(weight_kernel, ","),
                       "] needs sizes in [1, ", kMaxWindowAttribute, "]"));
    }
  }
  if (g.kernel != weight_kernel) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel_shape [", absl::StrJoin(attrs.kernel_shape, ","),
                     "] differs from the weights' [",
                     absl::StrJoin(weight_kernel, ","), "]"));
  }
  absl::StatusOr<std::vector<int64_t>> strides =
      PerAxis(attrs.strides, rank, 1, "strides");
  absl::StatusOr<std::vector<int64_t>> dilations =
      PerAxis(attrs.dilations, rank, 1, "dilations");
  absl::StatusOr<std::vector<int64_t>> pads =
      PerAxis(attrs.pads, 2 * rank, 0, "pads");
  for (const auto* s : {&strides, &dilations, &pads})
    if (!s->ok()) return s->status();
  g.strides = *strides;
  g.dilations = *dilations;
  g.pads_begin.assign(pads->begin(), pads->begin() + rank);
  g.pads_end.assign(pads->begin() + rank, pads->end());
  g.out.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t in = in_spatial[i], s = g.strides[i];
    switch (attrs.auto_pad) {
      case AutoPad::kNotSet:
        g.out[i] = (in + g.pads_begin[i] + g.pads_end[i] - span) / s + 1;
        if (in + g.pads_begin[i] + g.pads_end[i] < span) g.out[i] = 0;
        break;
      case AutoPad::kValid:
        g.pads_begin[i] = g.pads_end[i] = 0;
        g.out[i] = in < span ? 0 : (in - span) / s + 1;
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        g.out[i] = (in + s - 1) / s;
        const int64_t total =
            std::max<int64_t>(0, (g.out[i] - 1) * s + span - in);
        const int64_t small = total / 2;
        const bool upper = attrs.auto_pad == AutoPad::kSameUpper;
        g.pads_begin[i] = upper ? small : total - small;
        g.pads_end[i] = total - g.pads_begin[i];
        break;
      }
    }
    if (g.out[i] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spatial dim ", i, " of size ", in, " is smaller than the kernel ",
          "extent ", span, " with its padding"));
    }
  }
  return g;
}

namespace {

absl::StatusOr<ConvAttrs> ResolveConv(const SchemaNode& node, int max_inputs,
                                      const char* op) {
  if (node.num_inputs > max_inputs) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, " takes at most ", max_inputs, " inputs, got ", node.num_inputs));
  }
  ConvAttrs attrs;
  absl::StatusOr<ConvAttributes> window =
      ResolveConvAttributes(node.attributes);
  if (!window.ok()) return window.status();
  attrs.window = *std::move(window);
  absl::StatusOr<FusedActivationAttr> act =
      ResolveFusedActivation(node.attributes);
  if (!act.ok()) return act.status();
  attrs.activation = *act;
  absl::StatusOr<int64_t> channels_last =
      node.attributes.GetInt("channels_last", 0);
  if (!channels_last.ok()) return channels_last.status();
  if (*channels_last != 0 && *channels_last != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels_last must be 0 or 1, got ", *channels_last));
  }
  attrs.channels_last = *channels_last == 1;
  return attrs;
}

}  // namespace

void RegisterConvSchemas(SchemaRegistry& registry) {
  // X W [B]; FusedConv also [Z].
  registry.Register("Conv", std::make_shared<FunctionSchema<ConvAttrs>>(
                                [](const SchemaNode& node) {
                                  return ResolveConv(node, 3, "Conv");
                                },
                                nullptr));
  registry.RegisterInternal("FusedConv",
                            std::make_shared<FunctionSchema<ConvAttrs>>(
                                [](const SchemaNode& node) {
                                  return ResolveConv(node, 4, "FusedConv");
                                },
                                nullptr));
}

}  // namespace coalesce
