#include "engine/schema/slice_schema.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

// ---- Slice ------------------------------------------------------------------

absl::StatusOr<SliceSpec> ResolveSlice(const Shape& data,
                                       const std::vector<int64_t>& starts,
                                       const std::vector<int64_t>& ends,
                                       std::vector<int64_t> axes,
                                       std::vector<int64_t> steps) {
  const int64_t rank = data.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return absl::InvalidArgumentError(
        "starts, ends, axes and steps differ in length");
  }
  SliceSpec spec{data, std::vector<int64_t>(rank, 0),
                 std::vector<int64_t>(rank, 1)};
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(axes[i], rank);
    if (!axis.ok()) return axis.status();
    if (seen[*axis]) return absl::InvalidArgumentError("axes repeat");
    seen[*axis] = true;
    const int64_t dim = data[*axis];
    if (steps[i] == 0) return absl::InvalidArgumentError("step is 0");
    // A step of at least the axis selects one element at most: clamping it
    // to +-max(dim, 1) changes nothing and keeps the arithmetic in range.
    const int64_t bound = std::max<int64_t>(dim, 1);
    const int64_t step = std::clamp<int64_t>(steps[i], -bound, bound);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else if (dim == 0) {
      count = 0;  // clamp's range [0, -1] would be empty
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    spec.out_shape[*axis] = count;
    spec.start[*axis] = count > 0 ? start : 0;
    spec.step[*axis] = step;
  }
  return spec;
}

absl::StatusOr<SliceAttrs> ResolveSliceAttrs(const SchemaNode& node) {
  SliceAttrs attrs;
  attrs.from_inputs = node.opset >= 10;
  if (attrs.from_inputs) {
    if (node.num_inputs < 3)
      return absl::InvalidArgumentError("Slice needs starts and ends inputs");
    return attrs;
  }
  for (auto [name, field] : {std::pair{"starts", &attrs.starts},
                             {"ends", &attrs.ends},
                             {"axes", &attrs.axes}}) {
    absl::StatusOr<std::vector<int64_t>> v = node.attributes.GetInts(name);
    if (!v.ok()) return v.status();
    *field = *std::move(v);
  }
  return attrs;
}

absl::Status InferSlice(const SliceAttrs& attrs,
                        absl::Span<const TensorInfo> in,
                        absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("input 0 is required");
  absl::StatusOr<SliceSpec> spec = ResolveSliceSpec(attrs, in, {});
  if (!spec.ok()) return spec.status();
  out[0].dtype = in[0].dtype;
  out[0].shape = std::move(spec->out_shape);
  return absl::OkStatus();
}

// ---- Split ------------------------------------------------------------------

absl::StatusOr<SplitAttrs> ResolveSplit(const SchemaNode& node) {
  SplitAttrs attrs;
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  attrs.axis = *axis;
  attrs.split_from_input = node.opset >= 13;
  absl::StatusOr<std::vector<int64_t>> split = node.attributes.GetInts("split");
  if (!split.ok()) return split.status();
  attrs.split = *std::move(split);
  absl::StatusOr<int64_t> num = node.attributes.GetInt("num_outputs", 0);
  if (!num.ok()) return num.status();
  if (node.opset >= 18 && node.attributes.Has("num_outputs") &&
      *num != static_cast<int64_t>(node.outputs_used.size())) {
    return absl::InvalidArgumentError(
        "num_outputs differs from the number of outputs");
  }
  attrs.ceil_chunks = node.opset >= 18;
  return attrs;
}

absl::Status InferSplit(const SplitAttrs& attrs,
                        absl::Span<const TensorInfo> in,
                        absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("input 0 is required");
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, in[0].shape.size());
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<int64_t>> sizes =
      SplitSizes(attrs, in, {}, in[0].shape[*axis], out.size());
  if (!sizes.ok()) return sizes.status();
  for (size_t o = 0; o < out.size(); ++o) {
    out[o].dtype = in[0].dtype;
    out[o].shape = in[0].shape;
    out[o].shape[*axis] = (*sizes)[o];
  }
  return absl::OkStatus();
}

// ---- Pad --------------------------------------------------------------------

absl::StatusOr<PadAttrs> ResolvePad(const SchemaNode& node) {
  PadAttrs attrs;
  absl::StatusOr<std::string> mode =
      node.attributes.GetString("mode", "constant");
  if (!mode.ok()) return mode.status();
  if (*mode == "constant") {
    attrs.mode = PadMode::kConstant;
  } else if (*mode == "reflect") {
    attrs.mode = PadMode::kReflect;
  } else if (*mode == "edge") {
    attrs.mode = PadMode::kEdge;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported pad mode '", *mode, "'"));
  }
  attrs.from_inputs = node.opset >= 11;
  if (!attrs.from_inputs) {
    absl::StatusOr<std::vector<int64_t>> pads =
        node.attributes.GetInts(node.opset < 2 ? "paddings" : "pads");
    if (!pads.ok()) return pads.status();
    attrs.pads = *std::move(pads);
    absl::StatusOr<float> value = node.attributes.GetFloat("value", 0.0f);
    if (!value.ok()) return value.status();
    attrs.value = *value;
  } else if (node.num_inputs < 2) {
    return absl::InvalidArgumentError("Pad needs a pads input");
  }
  return attrs;
}

absl::Status InferPad(const PadAttrs& attrs, absl::Span<const TensorInfo> in,
                      absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("input 0 is required");
  absl::StatusOr<std::vector<int64_t>> pads = PadAmounts(attrs, in, {});
  if (!pads.ok()) return pads.status();
  const Shape& s = in[0].shape;
  const size_t rank = s.size();
  Shape shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (__builtin_add_overflow(s[d], (*pads)[d], &shape[d]) ||
        __builtin_add_overflow(shape[d], (*pads)[d + rank], &shape[d])) {
      return absl::InvalidArgumentError(
          absl::StrCat("pads of axis ", d, " overflow int64"));
    }
    // Cropping more than the axis is no tensor (and would let a pad near
    // INT64_MIN reach the kernel's coordinate arithmetic).
    if (shape[d] < 0 || (*pads)[d] < -s[d] || (*pads)[d + rank] < -s[d])
      return absl::InvalidArgumentError("pads crop below zero");
    const bool padded = (*pads)[d] > 0 || (*pads)[d + rank] > 0;
    if (padded && attrs.mode != PadMode::kConstant && s[d] == 0)
      return absl::InvalidArgumentError(
          "cannot reflect or edge-pad an empty axis");
  }
  if (in.size() > 2 && in[2].present() && in[2].dtype != in[0].dtype)
    return absl::InvalidArgumentError("constant_value differs in type");
  out[0].dtype = in[0].dtype;
  out[0].shape = std::move(shape);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SliceSpec> ResolveSliceSpec(
    const SliceAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data) {
  if (!attrs.from_inputs)
    return ResolveSlice(in[0].shape, attrs.starts, attrs.ends, attrs.axes, {});
  std::vector<int64_t> lists[4];
  const char* names[4] = {"starts", "ends", "axes", "steps"};
  for (int i = 0; i < 4; ++i) {
    const size_t input = i + 1;
    if (input >= in.size() || !in[input].present()) continue;
    absl::StatusOr<std::vector<int64_t>> v =
        ReadInts(in[input], data.empty() ? nullptr : data[input], names[i]);
    if (!v.ok()) return v.status();
    lists[i] = *std::move(v);
  }
  return ResolveSlice(in[0].shape, lists[0], lists[1], lists[2], lists[3]);
}

absl::StatusOr<std::vector<int64_t>> SplitSizes(
    const SplitAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data, int64_t dim, size_t num_outputs) {
  std::vector<int64_t> sizes = attrs.split;
  if (attrs.split_from_input && in.size() > 1 && in[1].present()) {
    absl::StatusOr<std::vector<int64_t>> v =
        ReadInts(in[1], data.empty() ? nullptr : data[1], "the split input");
    if (!v.ok()) return v.status();
    sizes = *std::move(v);
  }
  if (sizes.empty()) {
    const int64_t n = num_outputs;
    if (!attrs.ceil_chunks && dim % n != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis of ", dim, " does not split evenly into ", n));
    }
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return absl::InvalidArgumentError("negative split size");
    if (__builtin_add_overflow(total, s, &total))
      return absl::InvalidArgumentError("split sizes sum beyond int64");
  }
  if (sizes.size() != num_outputs || total != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("split sizes do not cover the axis of ", dim, " with ",
                     num_outputs, " outputs"));
  }
  return sizes;
}

absl::StatusOr<std::vector<int64_t>> PadAmounts(
    const PadAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data) {
  const int64_t rank = in[0].shape.size();
  std::vector<int64_t> pads = attrs.pads;
  auto at = [&](size_t i) { return data.empty() ? nullptr : data[i]; };
  if (attrs.from_inputs) {
    absl::StatusOr<std::vector<int64_t>> v =
        ReadInts(in[1], at(1), "the pads input");
    if (!v.ok()) return v.status();
    pads = *std::move(v);
  }
  if (attrs.from_inputs && in.size() > 3 && in[3].present()) {
    absl::StatusOr<std::vector<int64_t>> axes =
        ReadInts(in[3], at(3), "the axes input");
    if (!axes.ok()) return axes.status();
    if (pads.size() != 2 * axes->size())
      return absl::InvalidArgumentError("pads must be twice as long as axes");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes->size(); ++i) {
      absl::StatusOr<int64_t> axis = NormalizeAxis((*axes)[i], rank);
      if (!axis.ok()) return axis.status();
      full[*axis] = pads[i];
      full[*axis + rank] = pads[i + axes->size()];
    }
    pads = std::move(full);
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pads has ", pads.size(), " values, rank ", rank, " needs ", 2 * rank));
  }
  return pads;
}

void RegisterSliceSchemas(SchemaRegistry& registry) {
  registry.Register("Slice", std::make_shared<FunctionSchema<SliceAttrs>>(
                                 &ResolveSliceAttrs, &InferSlice));
  registry.Register("Split", std::make_shared<FunctionSchema<SplitAttrs>>(
                                 &ResolveSplit, &InferSplit));
  registry.Register("Pad", std::make_shared<FunctionSchema<PadAttrs>>(
                               &ResolvePad, &InferPad));
}

}  // namespace coalesce
