// Reductions in the device registry (device_ops.h): ReduceMean and
// ReduceMax over a trailing block of axes (what torch.export writes for
// global average pooling, and RMSNorm's mean of squares), as a 1 x cols
// window of the pool kernel over [rows, cols]. Axes and keepdims come from
// the schema (engine/schema/reduce_schema.h); other reductions and axes
// that are not trailing are refused with the reason.
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/device_ops_internal.h"
#include "engine/schema/reduce_schema.h"

namespace coalesce::device_ops {

absl::StatusOr<LoweredNode> LowerReduce(const NodeView& v) {
  if (absl::Status s = v.RequireFloat({0}); !s.ok()) return s;
  absl::StatusOr<const ReduceAttrs*> attrs = v.resolved<ReduceAttrs>();
  if (!attrs.ok()) return attrs.status();
  const Shape& x = v.in_shape(0);
  absl::StatusOr<std::vector<bool>> reduce =
      ReducedDims(**attrs, x, v.has_input(1) ? v.in(1).info : TensorInfo{});
  if (!reduce.ok()) return reduce.status();
  // [rows, cols]: every reduced axis of size above 1 after every kept one.
  int64_t rows = 1, cols = 1;
  bool reducing = false;
  for (size_t d = 0; d < x.size(); ++d) {
    if ((*reduce)[d]) {
      cols *= x[d];
      reducing = reducing || x[d] != 1;
    } else {
      if (reducing && x[d] != 1) {
        return absl::UnimplementedError(
            "a reduction over axes that are not the last ones");
      }
      rows *= x[d];
    }
  }
  if (cols == 0) return absl::UnimplementedError("an empty reduction");
  Pool2DArgs args;
  args.planes = rows;
  args.in_h = 1;
  args.in_w = cols;
  args.out_h = 1;
  args.out_w = 1;
  args.kernel_h = 1;
  args.kernel_w = cols;
  args.max = *v.node().op_type == "ReduceMax";
  const int ix = v.in_id(0), iy = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  if (rows == 0) return lowered;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.Pool2D(c.stream, args, F(c, ix), F(c, iy));
  });
  return lowered;
}

}  // namespace coalesce::device_ops
