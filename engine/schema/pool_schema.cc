#include "engine/schema/pool_schema.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"
#include "engine/schema/window_limits.h"

namespace coalesce {
namespace {

// `values`, or `fill` per spatial axis when absent; InvalidArgument unless
// there are `count` values, each in [min, kMaxWindowAttribute].
absl::StatusOr<std::vector<int64_t>> PerAxis(const NodeAttributes& attrs,
                                             const std::string& name,
                                             size_t count, int64_t fill,
                                             int64_t min) {
  absl::StatusOr<std::vector<int64_t>> values = attrs.GetInts(name);
  if (!values.ok()) return values.status();
  if (values->empty()) return std::vector<int64_t>(count, fill);
  bool valid = values->size() == count;
  for (int64_t v : *values)
    valid = valid && v >= min && v <= kMaxWindowAttribute;
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " [", absl::StrJoin(*values, ","), "] needs ", count,
                     " values in [", min, ", ", kMaxWindowAttribute, "]"));
  }
  return values;
}

absl::StatusOr<bool> Flag(const NodeAttributes& attrs,
                          const std::string& name) {
  absl::StatusOr<int64_t> v = attrs.GetInt(name, 0);
  if (!v.ok()) return v.status();
  if (*v != 0 && *v != 1)
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be 0 or 1, got ", *v));
  return *v == 1;
}

absl::Status ResolveWindow(const NodeAttributes& attrs, PoolAttrs& a) {
  absl::StatusOr<std::vector<int64_t>> kernel = attrs.GetInts("kernel_shape");
  if (!kernel.ok()) return kernel.status();
  const size_t rank = kernel->size();
  if (rank == 0 || rank > kMaxPoolSpatialAxes) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel_shape must have 1 to ", kMaxPoolSpatialAxes,
                     " values, has ", rank));
  }
  absl::StatusOr<std::vector<int64_t>> checked =
      PerAxis(attrs, "kernel_shape", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> strides =
      PerAxis(attrs, "strides", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> dilations =
      PerAxis(attrs, "dilations", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> pads =
      PerAxis(attrs, "pads", 2 * rank, 0, 0);
  for (const auto* s : {&checked, &strides, &dilations, &pads})
    if (!s->ok()) return s->status();
  a.kernel = *std::move(checked);
  a.strides = *std::move(strides);
  a.dilations = *std::move(dilations);
  a.pads = *std::move(pads);
  return absl::OkStatus();
}

absl::StatusOr<PoolAttrs> ResolvePool(const SchemaNode& node, bool max) {
  const NodeAttributes& attrs = node.attributes;
  PoolAttrs a;
  a.max = max;
  absl::StatusOr<std::string> auto_pad = attrs.GetString("auto_pad", "NOTSET");
  if (!auto_pad.ok()) return auto_pad.status();
  absl::StatusOr<AutoPad> padding = ResolveAutoPad(*auto_pad);
  if (!padding.ok()) return padding.status();
  a.auto_pad = *padding;
  if (absl::Status s = ResolveWindow(attrs, a); !s.ok()) return s;
  absl::StatusOr<bool> ceil_mode = Flag(attrs, "ceil_mode");
  absl::StatusOr<bool> include_pad = Flag(attrs, "count_include_pad");
  absl::StatusOr<bool> column_major = Flag(attrs, "storage_order");
  absl::StatusOr<bool> channels_last = Flag(attrs, "channels_last");
  for (const auto* s :
       {&ceil_mode, &include_pad, &column_major, &channels_last})
    if (!s->ok()) return s->status();
  a.channels_last = *channels_last;
  a.ceil_mode = *ceil_mode;
  a.count_include_pad = !max && *include_pad;
  a.column_major_indices = max && *column_major;
  const bool indices = node.outputs_used.size() > 1 && node.outputs_used[1];
  if (!max && node.outputs_used.size() > 1)
    return absl::InvalidArgumentError("AveragePool has one output");
  if (a.channels_last && indices)
    return absl::InvalidArgumentError(
        "a channels-last MaxPool has no Indices output");
  return a;
}

absl::Status InferPool(const PoolAttrs& a, absl::Span<const TensorInfo> in,
                       absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  const Shape& x = in[0].shape;
  if (x.size() != a.kernel.size() + 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input of shape ", ShapeToString(x), " does not have ", a.kernel.size(),
        " spatial dims after N and C, as kernel_shape [",
        absl::StrJoin(a.kernel, ","), "] has"));
  }
  absl::StatusOr<PoolWindows> w =
      ResolvePoolWindows(a, PoolSpatialDims(x, a.channels_last));
  if (!w.ok()) return w.status();
  Shape shape = {x[0]};
  if (!a.channels_last) shape.push_back(x[1]);
  shape.insert(shape.end(), w->out.begin(), w->out.end());
  if (a.channels_last) shape.push_back(x.back());
  out[0] = {DataType::kFp32, shape, nullptr};
  if (out.size() > 1) out[1] = {DataType::kInt64, shape, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<GlobalPoolAttrs> ResolveGlobalPool(const SchemaNode& node,
                                                  bool max) {
  absl::StatusOr<bool> channels_last = Flag(node.attributes, "channels_last");
  if (!channels_last.ok()) return channels_last.status();
  return GlobalPoolAttrs{max, *channels_last};
}

absl::Status InferGlobalPool(const GlobalPoolAttrs& a,
                             absl::Span<const TensorInfo> in,
                             absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  const Shape& s = in[0].shape;
  if (s.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input of shape ", ShapeToString(s), " has no N and C dims"));
  }
  Shape shape(s.size(), 1);
  shape[0] = s[0];
  if (a.channels_last) {
    shape.back() = s.back();
  } else {
    shape[1] = s[1];
  }
  out[0] = {DataType::kFp32, shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> PoolSpatialDims(const Shape& x, bool channels_last) {
  return channels_last ? std::vector<int64_t>(x.begin() + 1, x.end() - 1)
                       : std::vector<int64_t>(x.begin() + 2, x.end());
}

absl::StatusOr<PoolWindows> ResolvePoolWindows(
    const PoolAttrs& a, const std::vector<int64_t>& spatial) {
  const size_t rank = a.kernel.size();
  if (spatial.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("the input has ", spatial.size(),
                     " spatial dims, kernel_shape ", rank));
  }
  PoolWindows w;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t in = spatial[i], s = a.strides[i];
    const int64_t span = (a.kernel[i] - 1) * a.dilations[i] + 1;
    int64_t begin = a.pads[i], end = a.pads[i + rank], out = 0;
    if (a.auto_pad == AutoPad::kSameUpper ||
        a.auto_pad == AutoPad::kSameLower) {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      const bool upper = a.auto_pad == AutoPad::kSameUpper;
      begin = upper ? total / 2 : total - total / 2;
      end = total - begin;
    } else {
      if (a.auto_pad == AutoPad::kValid) begin = end = 0;
      const int64_t room = in + begin + end - span;
      if (room < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spatial dim ", i, " of size ", in, " (padded by ", begin, "+", end,
            ") is smaller than the window extent ", span));
      }
      out = (a.ceil_mode ? (room + s - 1) / s : room / s) + 1;
      if (a.ceil_mode && (out - 1) * s >= in + begin) --out;
    }
    w.out.push_back(out);
    w.pads_begin.push_back(begin);
    w.pads_end.push_back(end);
  }
  return w;
}

void RegisterPoolSchemas(SchemaRegistry& registry) {
  for (const bool max : {true, false}) {
    registry.Register(
        max ? "MaxPool" : "AveragePool",
        std::make_shared<FunctionSchema<PoolAttrs>>(
            [max](const SchemaNode& node) { return ResolvePool(node, max); },
            &InferPool));
    registry.Register(max ? "GlobalMaxPool" : "GlobalAveragePool",
                      std::make_shared<FunctionSchema<GlobalPoolAttrs>>(
                          [max](const SchemaNode& node) {
                            return ResolveGlobalPool(node, max);
                          },
                          &InferGlobalPool));
  }
}

}  // namespace coalesce
