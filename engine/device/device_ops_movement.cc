// Data movement of the device registry: Slice and Split as strided copies,
// Pad, and Resize (nearest, linear), reading the starts/steps, split sizes,
// pads and resized axes their schemas resolve (engine/schema/slice_schema.h,
// resize_schema.h) from values known while planning.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/resize_schema.h"
#include "engine/schema/slice_schema.h"

namespace coalesce {
namespace device_ops {
namespace {

// The node's inputs as planned (absent ones empty), for the schema's
// helpers, which read constant inputs from them.
std::vector<TensorInfo> InputInfos(const NodeView& v) {
  std::vector<TensorInfo> infos(v.num_inputs());
  for (int i = 0; i < v.num_inputs(); ++i) {
    if (v.has_input(i)) infos[i] = v.in(i).info;
  }
  return infos;
}

// Row-major strides of `shape`, in elements.
std::vector<int64_t> DenseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

absl::Status CheckMovable(const NodeView& v) {
  return CheckElementCopy(v.in_element_bytes(0), v.in_shape(0).size());
}

// A step copying the view (offset, strides) of input `x` into value `y`.
DeviceStep StridedStep(const NodeView& v, int x, int y, int64_t offset,
                       std::vector<int64_t> strides, const Shape& y_shape) {
  const int64_t x_count = Count(v.in_shape(0));
  // As stored: Slice and Split move float16 elements in FP16 mode.
  const size_t elem = v.in_element_bytes(0);
  return [=](const StepContext& c) {
    return c.kernels.StridedCopy(c.stream, {.x = c.addresses[x],
                                            .x_count = x_count,
                                            .offset = offset,
                                            .strides = strides,
                                            .y_shape = y_shape,
                                            .element_bytes = elem,
                                            .y = c.addresses[y]});
  };
}

}  // namespace

absl::StatusOr<LoweredNode> LowerSlice(const NodeView& v) {
  auto attrs = v.resolved<SliceAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = CheckMovable(v); !s.ok()) return s;
  absl::StatusOr<SliceSpec> spec = ResolveSliceSpec(**attrs, InputInfos(v), {});
  if (!spec.ok()) return spec.status();
  const Shape& x = v.in_shape(0);
  std::vector<int64_t> strides = DenseStrides(x);
  int64_t offset = 0;
  for (size_t d = 0; d < x.size(); ++d) {
    offset += spec->start[d] * strides[d];
    strides[d] *= spec->step[d];
  }
  LoweredNode lowered;
  lowered.reads = {v.in_id(0)};
  if (Count(spec->out_shape) == 0) return lowered;
  lowered.steps.push_back(StridedStep(v, v.in_id(0), v.out_id(0), offset,
                                      std::move(strides), spec->out_shape));
  return lowered;
}

// Output o is the o-th part of input 0 along the axis.
absl::StatusOr<LoweredNode> LowerSplit(const NodeView& v) {
  auto attrs = v.resolved<SplitAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = CheckMovable(v); !s.ok()) return s;
  const Shape& x = v.in_shape(0);
  auto axis = NormalizeAxis((*attrs)->axis, x.size());
  if (!axis.ok()) return axis.status();
  const size_t parts = v.node().outputs.size();
  absl::StatusOr<std::vector<int64_t>> sizes =
      SplitSizes(**attrs, InputInfos(v), {}, x[*axis], parts);
  if (!sizes.ok()) return sizes.status();
  const std::vector<int64_t> strides = DenseStrides(x);
  LoweredNode lowered;
  lowered.reads = {v.in_id(0)};
  int64_t begin = 0;
  for (size_t o = 0; o < parts; ++o) {
    Shape y_shape = x;
    y_shape[*axis] = (*sizes)[o];
    if (v.out_id(o) >= 0 && Count(y_shape) > 0) {  // listed, not empty
      lowered.steps.push_back(StridedStep(v, v.in_id(0), v.out_id(o),
                                          begin * strides[*axis], strides,
                                          y_shape));
    }
    begin += (*sizes)[o];
  }
  return lowered;
}

absl::StatusOr<LoweredNode> LowerPad(const NodeView& v) {
  auto attrs = v.resolved<PadAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = CheckMovable(v); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> pads =
      PadAmounts(**attrs, InputInfos(v), {});
  if (!pads.ok()) return pads.status();
  PadArgs args;
  args.x_shape = v.in_shape(0);
  args.y_shape = v.out_shape(0);
  args.begin.assign(pads->begin(), pads->begin() + args.x_shape.size());
  args.element_bytes = ElementByteSize(v.in(0).info.dtype);
  args.mode = (*attrs)->mode == PadMode::kEdge      ? DevicePadMode::kEdge
              : (*attrs)->mode == PadMode::kReflect ? DevicePadMode::kReflect
                                                    : DevicePadMode::kConstant;
  if (v.has_input(2)) {  // constant_value, in the data's type
    const TensorInfo& value = v.in(2).info;
    if (value.constant_data == nullptr) {
      return absl::UnimplementedError(
          "a Pad constant_value computed at run time; the GPU needs it while "
          "planning");
    }
    std::memcpy(&args.fill, value.constant_data, args.element_bytes);
  } else if ((*attrs)->value != 0.0f) {  // the attribute before opset 11
    if (v.in(0).info.dtype != DataType::kFp32) {
      return absl::UnimplementedError("a nonzero Pad value on non-float data");
    }
    std::memcpy(&args.fill, &(*attrs)->value, sizeof(float));
  }
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(args.y_shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    PadArgs a = args;
    a.x = c.addresses[x];
    a.y = c.addresses[y];
    return c.kernels.Pad(c.stream, a);
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerResize(const NodeView& v) {
  auto attrs = v.resolved<ResizeAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  const ResizeAttrs& a = **attrs;
  if (a.mode == ResizeMode::kCubic)
    return absl::UnimplementedError(
        "cubic Resize; the GPU interpolates "
        "nearest and linear");
  if (a.coordinate == ResizeCoordinate::kTfCropAndResize)
    return absl::UnimplementedError("tf_crop_and_resize");
  if (a.mode == ResizeMode::kLinear && a.exclude_outside)
    return absl::UnimplementedError("exclude_outside");
  auto axes = ResolveResizeAxes(a, InputInfos(v), {});
  if (!axes.ok()) return axes.status();
  if (axes->size() > 8) return absl::UnimplementedError("rank above 8");
  for (const ResizeAxisSpec& axis : *axes) {
    if (a.antialias && a.mode == ResizeMode::kLinear && axis.scale < 1.0)
      return absl::UnimplementedError("antialiased downscaling");
  }
  ResizeArgs args;
  args.axes = *std::move(axes);
  args.mode = a.mode;
  args.coordinate = a.coordinate;
  args.nearest = a.nearest;
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(v.out_shape(0)) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    ResizeArgs r = args;
    r.x = F(c, x);
    r.y = F(c, y);
    return c.kernels.Resize(c.stream, r);
  });
  return lowered;
}

}  // namespace device_ops
}  // namespace coalesce
