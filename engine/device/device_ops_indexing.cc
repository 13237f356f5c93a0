// The indexing family of the device registry: GatherND, GatherElements,
// CumSum and ArgMax, reading the attributes their schemas resolved
// (engine/schema/indexing_schema.h, reduce_schema.h). Exporters write them
// for position ids (RoBERTa's CumSum of the mask), pooled tokens (CLIP's
// ArgMax, torch.export's GatherND of the last hidden state) and masks.
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/indexing_schema.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/reduce_schema.h"

namespace coalesce {
namespace device_ops {
namespace {

// float32, int64 or int32: what CumSum and ArgMax compute on.
absl::Status CheckArithmetic(const NodeView& v) {
  const DataType t = v.in(0).info.dtype;
  if (t == DataType::kFp32 || t == DataType::kInt64 || t == DataType::kInt32)
    return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("input 0 is ", std::string(DataTypeName(t)),
                   "; the GPU takes float32, int64 or int32"));
}

}  // namespace

absl::StatusOr<LoweredNode> LowerGatherNd(const NodeView& v) {
  auto attrs = v.resolved<GatherNdAttrs>();
  if (!attrs.ok()) return attrs.status();
  const Shape& data = v.in_shape(0);
  const Shape& indices = v.in_shape(1);
  const size_t elem = ElementByteSize(v.in(0).info.dtype);
  if (absl::Status s = CheckElementCopy(elem, data.size()); !s.ok()) return s;
  if (v.in(1).info.dtype != DataType::kInt64) {
    return absl::UnimplementedError("GatherND indices that are not int64");
  }
  const size_t b = (*attrs)->batch_dims, k = indices.back();
  GatherNdArgs args;
  args.element_bytes = elem;
  args.batches = Product(data, 0, b);
  args.rows_per_batch = Product(indices, b, indices.size() - 1);
  args.dims.assign(data.begin() + b, data.begin() + b + k);
  args.slice = Product(data, b + k, data.size());
  const int d = v.in_id(0), ix = v.in_id(1), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {d, ix};
  if (Count(v.out_shape(0)) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    GatherNdArgs a = args;
    a.data = c.addresses[d];
    a.indices = static_cast<const int64_t*>(c.addresses[ix]);
    a.y = c.addresses[y];
    return c.kernels.GatherNd(c.stream, a);
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerGatherElements(const NodeView& v) {
  auto attrs = v.resolved<GatherElementsAttrs>();
  if (!attrs.ok()) return attrs.status();
  GatherElementsArgs args;
  args.data_shape = v.in_shape(0);
  args.indices_shape = v.in_shape(1);
  args.element_bytes = ElementByteSize(v.in(0).info.dtype);
  args.indices_int64 = v.in(1).info.dtype == DataType::kInt64;
  if (absl::Status s =
          CheckElementCopy(args.element_bytes, args.data_shape.size());
      !s.ok())
    return s;
  auto axis = NormalizeAxis((*attrs)->axis, args.data_shape.size());
  if (!axis.ok()) return axis.status();
  args.axis = *axis;
  const int d = v.in_id(0), ix = v.in_id(1), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {d, ix};
  if (Count(args.indices_shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    GatherElementsArgs a = args;
    a.data = c.addresses[d];
    a.indices = c.addresses[ix];
    a.y = c.addresses[y];
    return c.kernels.GatherElements(c.stream, a);
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerCumSum(const NodeView& v) {
  auto attrs = v.resolved<CumSumAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = CheckArithmetic(v); !s.ok()) return s;
  const TensorInfo& axis_info = v.in(1).info;
  if (axis_info.constant_data == nullptr) {
    return absl::UnimplementedError(
        "a CumSum axis computed at run time; the GPU needs it while planning");
  }
  const Shape& shape = v.in_shape(0);
  auto axis = CumSumAxis(axis_info, axis_info.constant_data, shape);
  if (!axis.ok()) return axis.status();
  const int64_t outer = Product(shape, 0, *axis);
  const int64_t n = shape.empty() ? 1 : shape[*axis];
  const int64_t inner =
      shape.empty() ? 1 : Product(shape, *axis + 1, shape.size());
  const DataType type = v.in(0).info.dtype;
  const bool exclusive = (*attrs)->exclusive, reverse = (*attrs)->reverse;
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(shape) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.CumSum(c.stream, {.type = type,
                                       .x = c.addresses[x],
                                       .y = c.addresses[y],
                                       .outer = outer,
                                       .n = n,
                                       .inner = inner,
                                       .exclusive = exclusive,
                                       .reverse = reverse});
  });
  return lowered;
}

absl::StatusOr<LoweredNode> LowerArgMax(const NodeView& v) {
  auto attrs = v.resolved<ArgMaxAttrs>();
  if (!attrs.ok()) return attrs.status();
  if (absl::Status s = CheckArithmetic(v); !s.ok()) return s;
  const Shape& shape = v.in_shape(0);
  auto axis = NormalizeAxis((*attrs)->axis, shape.size());
  if (!axis.ok()) return axis.status();
  const int64_t outer = Product(shape, 0, *axis), n = shape[*axis];
  const int64_t inner = Product(shape, *axis + 1, shape.size());
  const DataType type = v.in(0).info.dtype;
  const bool last = (*attrs)->select_last;
  const int x = v.in_id(0), y = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {x};
  if (Count(v.out_shape(0)) == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.ArgMax(c.stream,
                            {.type = type,
                             .x = c.addresses[x],
                             .y = static_cast<int64_t*>(c.addresses[y]),
                             .outer = outer,
                             .n = n,
                             .inner = inner,
                             .select_last = last});
  });
  return lowered;
}

}  // namespace device_ops
}  // namespace coalesce
