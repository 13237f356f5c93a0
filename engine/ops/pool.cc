// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on float
// [N, C, spatial...] tensors with 1 to 3 spatial axes.
//
// Attributes: kernel_shape (required), strides, pads ([begins..., ends...]),
// auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID), dilations (MaxPool from
// opset 10, AveragePool from 19), ceil_mode (opset 10), count_include_pad
// (AveragePool), storage_order (MaxPool, opset 8; the order of the optional
// int64 Indices output). Output size per spatial axis, with span =
// (kernel - 1) * dilation + 1:
//   NOTSET, VALID (pads 0): floor or, with ceil_mode, ceil of
//     (in + pads - span) / stride, plus 1; in ceil mode the last window must
//     start inside the input or its begin padding, else it is dropped.
//   SAME_UPPER, SAME_LOWER: ceil(in / stride), padded by
//     (out - 1) * stride + span - in, the odd element at the end (UPPER) or
//     the beginning (LOWER).
//
// The int attribute "channels_last" (default 0; the optimizer's layout pass
// sets it) makes X [N, spatial..., C] and Y [N, out spatial..., C], for all
// four; a channels-last MaxPool has no Indices output.
#include "kernels/cpu/pool.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/window_limits.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

enum class PoolKind { kMax, kAverage };
enum class AutoPadding { kNotSet, kSameUpper, kSameLower, kValid };

constexpr size_t kMaxSpatialAxes = kernels::kMaxPoolAxes;

absl::StatusOr<AutoPadding> ParseAutoPadding(const std::string& value) {
  if (value == "NOTSET") return AutoPadding::kNotSet;
  if (value == "SAME_UPPER") return AutoPadding::kSameUpper;
  if (value == "SAME_LOWER") return AutoPadding::kSameLower;
  if (value == "VALID") return AutoPadding::kValid;
  return absl::InvalidArgumentError(absl::StrCat(
      "auto_pad '", value, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
}

struct PoolAttributes {
  AutoPadding auto_pad = AutoPadding::kNotSet;
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceil_mode = false;
  bool count_include_pad = false;
  bool column_major_indices = false;
  bool channels_last = false;
};

// [N, spatial..., C] -> [N, C, spatial...], the dims the geometry reads.
Shape Planar(const Shape& shape) {
  Shape planar = {shape[0], shape.back()};
  planar.insert(planar.end(), shape.begin() + 1, shape.end() - 1);
  return planar;
}

// `values`, or `fill` per spatial axis when absent; InvalidArgument unless
// there are `count` values, each in [min, kMaxWindowAttribute].
absl::StatusOr<std::vector<int64_t>> PerAxis(const OpNode& node,
                                             const std::string& name,
                                             size_t count, int64_t fill,
                                             int64_t min) {
  absl::StatusOr<std::vector<int64_t>> values = node.GetInts(name);
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

absl::Status ParseWindowAttributes(const OpNode& node, PoolAttributes& a) {
  absl::StatusOr<std::vector<int64_t>> kernel = node.GetInts("kernel_shape");
  if (!kernel.ok()) return kernel.status();
  const size_t rank = kernel->size();
  if (rank == 0 || rank > kMaxSpatialAxes) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel_shape must have 1 to ", kMaxSpatialAxes,
                     " values, has ", rank));
  }
  absl::StatusOr<std::vector<int64_t>> checked =
      PerAxis(node, "kernel_shape", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> strides =
      PerAxis(node, "strides", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> dilations =
      PerAxis(node, "dilations", rank, 1, 1);
  absl::StatusOr<std::vector<int64_t>> pads =
      PerAxis(node, "pads", 2 * rank, 0, 0);
  for (const auto* s : {&checked, &strides, &dilations, &pads})
    if (!s->ok()) return s->status();
  a.kernel = *std::move(checked);
  a.strides = *std::move(strides);
  a.dilations = *std::move(dilations);
  a.pads = *std::move(pads);
  return absl::OkStatus();
}

absl::StatusOr<bool> FlagAttribute(const OpNode& node,
                                   const std::string& name) {
  absl::StatusOr<int64_t> v = node.GetInt(name, 0);
  if (!v.ok()) return v.status();
  if (*v != 0 && *v != 1)
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be 0 or 1, got ", *v));
  return *v == 1;
}

absl::StatusOr<PoolAttributes> ParsePoolAttributes(const OpNode& node,
                                                   PoolKind kind) {
  PoolAttributes a;
  absl::StatusOr<std::string> auto_pad = node.GetString("auto_pad", "NOTSET");
  if (!auto_pad.ok()) return auto_pad.status();
  absl::StatusOr<AutoPadding> padding = ParseAutoPadding(*auto_pad);
  if (!padding.ok()) return padding.status();
  a.auto_pad = *padding;
  if (absl::Status s = ParseWindowAttributes(node, a); !s.ok()) return s;
  absl::StatusOr<bool> ceil_mode = FlagAttribute(node, "ceil_mode");
  absl::StatusOr<bool> include_pad = FlagAttribute(node, "count_include_pad");
  absl::StatusOr<bool> column_major = FlagAttribute(node, "storage_order");
  absl::StatusOr<bool> channels_last = FlagAttribute(node, "channels_last");
  for (const auto* s :
       {&ceil_mode, &include_pad, &column_major, &channels_last})
    if (!s->ok()) return s->status();
  a.channels_last = *channels_last;
  a.ceil_mode = *ceil_mode;
  a.count_include_pad = kind == PoolKind::kAverage && *include_pad;
  a.column_major_indices = kind == PoolKind::kMax && *column_major;
  return a;
}

// Output size and pads along one axis (see the file comment).
absl::Status ResolveAxis(const PoolAttributes& a, size_t i, int64_t in,
                         kernels::PoolGeometry& g) {
  const size_t rank = a.kernel.size();
  const int64_t s = a.strides[i];
  const int64_t span = (a.kernel[i] - 1) * a.dilations[i] + 1;
  int64_t begin = a.pads[i], end = a.pads[i + rank], out = 0;
  if (a.auto_pad == AutoPadding::kSameUpper ||
      a.auto_pad == AutoPadding::kSameLower) {
    out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    const bool upper = a.auto_pad == AutoPadding::kSameUpper;
    begin = upper ? total / 2 : total - total / 2;
    end = total - begin;
  } else {
    if (a.auto_pad == AutoPadding::kValid) begin = end = 0;
    const int64_t room = in + begin + end - span;
    if (room < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spatial dim ", i, " of size ", in, " (padded by ", begin, "+", end,
          ") is smaller than the window extent ", span));
    }
    out = (a.ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (a.ceil_mode && (out - 1) * s >= in + begin) --out;
  }
  g.in[i] = in;
  g.out[i] = out;
  g.pads_begin[i] = begin;
  g.pads_end[i] = end;
  return absl::OkStatus();
}

absl::StatusOr<kernels::PoolGeometry> ResolveGeometry(const PoolAttributes& a,
                                                      const Shape& shape) {
  if (shape.size() != a.kernel.size() + 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input of shape ", ShapeToString(shape), " does not have ",
        a.kernel.size(), " spatial dims after N and C, as kernel_shape [",
        absl::StrJoin(a.kernel, ","), "] has"));
  }
  kernels::PoolGeometry g;
  g.planes = shape[0] * shape[1];
  g.axes = static_cast<int>(a.kernel.size());
  for (int i = 0; i < g.axes; ++i) {
    g.kernel[i] = a.kernel[i];
    g.strides[i] = a.strides[i];
    g.dilations[i] = a.dilations[i];
  }
  for (size_t i = 0; i < a.kernel.size(); ++i)
    if (absl::Status s = ResolveAxis(a, i, shape[i + 2], g); !s.ok()) return s;
  return g;
}

class PoolOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          PoolKind kind) {
    absl::StatusOr<PoolAttributes> attrs = ParsePoolAttributes(node, kind);
    if (!attrs.ok()) return attrs.status();
    if (kind == PoolKind::kAverage && node.num_outputs() > 1)
      return absl::InvalidArgumentError("AveragePool has one output");
    if (attrs->channels_last && node.num_outputs() > 1)
      return absl::InvalidArgumentError(
          "a channels-last MaxPool has no Indices output");
    return std::make_unique<PoolOp>(kind, *std::move(attrs));
  }

  PoolOp(PoolKind kind, PoolAttributes attrs)
      : kind_(kind), attrs_(std::move(attrs)) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    absl::StatusOr<kernels::PoolGeometry> g = Geometry(in[0].shape);
    if (!g.ok()) return g.status();
    const Shape& x = in[0].shape;
    Shape shape = {x[0]};
    if (!attrs_.channels_last) shape.push_back(x[1]);
    shape.insert(shape.end(), g->out.begin(), g->out.begin() + g->axes);
    if (attrs_.channels_last) shape.push_back(x.back());
    out[0] = {DataType::kFp32, shape, nullptr};
    if (out.size() > 1) out[1] = {DataType::kInt64, shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    absl::StatusOr<kernels::PoolGeometry> g = Geometry(*in[0].shape);
    if (!g.ok()) return g.status();
    if (attrs_.channels_last) {
      const int64_t channels = in[0].shape->back();
      if (kind_ == PoolKind::kAverage) {
        kernels::AveragePoolChannelsLast(*g, channels, in[0].as<float>(),
                                         attrs_.count_include_pad,
                                         out[0].as<float>());
      } else {
        kernels::MaxPoolChannelsLast(*g, channels, in[0].as<float>(),
                                     out[0].as<float>());
      }
      return absl::OkStatus();
    }
    if (kind_ == PoolKind::kAverage) {
      kernels::AveragePool(*g, in[0].as<float>(), attrs_.count_include_pad,
                           out[0].as<float>());
      return absl::OkStatus();
    }
    int64_t* indices = out.size() > 1 ? out[1].as<int64_t>() : nullptr;
    kernels::MaxPool(*g, in[0].as<float>(), out[0].as<float>(), indices,
                     attrs_.column_major_indices);
    return absl::OkStatus();
  }

 private:
  // The windows of input `shape`; channels-last: one plane per image.
  absl::StatusOr<kernels::PoolGeometry> Geometry(const Shape& shape) const {
    if (!attrs_.channels_last) return ResolveGeometry(attrs_, shape);
    if (shape.size() < 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("channels-last input of shape ", ShapeToString(shape),
                       " has no spatial dims"));
    }
    absl::StatusOr<kernels::PoolGeometry> g =
        ResolveGeometry(attrs_, Planar(shape));
    if (g.ok()) g->planes = shape[0];
    return g;
  }

  PoolKind kind_;
  PoolAttributes attrs_;
};

// GlobalMaxPool and GlobalAveragePool: [N, C, spatial...] -> [N, C, 1...].
class GlobalPoolOp : public OpKernel {
 public:
  GlobalPoolOp(PoolKind kind, bool channels_last)
      : kind_(kind), channels_last_(channels_last) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    const Shape& s = in[0].shape;
    if (s.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input of shape ", ShapeToString(s), " has no N and C dims"));
    }
    Shape shape(s.size(), 1);
    shape[0] = s[0];
    if (channels_last_) {
      shape.back() = s.back();
    } else {
      shape[1] = s[1];
    }
    out[0] = {DataType::kFp32, shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    if (channels_last_) {
      const int64_t plane_size = DimProduct(s, 1, s.size() - 1);
      if (kind_ == PoolKind::kMax) {
        kernels::GlobalMaxPoolChannelsLast(in[0].as<float>(), s[0], plane_size,
                                           s.back(), out[0].as<float>());
      } else {
        kernels::GlobalAveragePoolChannelsLast(
            in[0].as<float>(), s[0], plane_size, s.back(), out[0].as<float>());
      }
      return absl::OkStatus();
    }
    const int64_t planes = s[0] * s[1];
    const int64_t plane_size = DimProduct(s, 2, s.size());
    if (kind_ == PoolKind::kMax) {
      kernels::GlobalMaxPool(in[0].as<float>(), planes, plane_size,
                             out[0].as<float>());
    } else {
      kernels::GlobalAveragePool(in[0].as<float>(), planes, plane_size,
                                 out[0].as<float>());
    }
    return absl::OkStatus();
  }

 private:
  PoolKind kind_;
  bool channels_last_;  // X [N, spatial..., C], Y [N, 1..., C]
};

OpFactory PoolFactory(PoolKind kind) {
  return [kind](const OpNode& node) { return PoolOp::Create(node, kind); };
}

OpFactory GlobalPoolFactory(PoolKind kind) {
  return [kind](
             const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    absl::StatusOr<bool> channels_last = FlagAttribute(node, "channels_last");
    if (!channels_last.ok()) return channels_last.status();
    return std::make_unique<GlobalPoolOp>(kind, *channels_last);
  };
}

}  // namespace

void RegisterPoolOps(OpRegistry& registry) {
  registry.Register("MaxPool", PoolFactory(PoolKind::kMax));
  registry.Register("AveragePool", PoolFactory(PoolKind::kAverage));
  registry.Register("GlobalMaxPool", GlobalPoolFactory(PoolKind::kMax));
  registry.Register("GlobalAveragePool", GlobalPoolFactory(PoolKind::kAverage));
}

}  // namespace coalesce
