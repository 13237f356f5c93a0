// Reductions in the device registry (device_ops.h) over a trailing block of
// axes (what torch.export writes for global average pooling, RMSNorm's mean
// of squares, Swin v2's L2 norms), as a 1 x cols window of the pool kernel
// over [rows, cols]: ReduceMean and ReduceMax directly; ReduceSum,
// ReduceSumSquare, ReduceL1 and ReduceL2 as a mean of x, x^2 or |x| scaled
// by cols (then a square root for L2); ReduceMin as -max(-x). Axes and
// keepdims come from the schema (engine/schema/reduce_schema.h); other
// reductions and axes that are not trailing are refused with the reason.
#include <optional>
#include <string>
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
  const std::string& op = *v.node().op_type;
  args.max = op == "ReduceMax" || op == "ReduceMin";
  // What each element becomes before the pool, and what the pooled value
  // becomes after it.
  std::optional<ActivationSpec> before, after;
  bool scale = false;  // times cols: a sum from a mean
  if (op == "ReduceMin") {
    before = after = ActivationSpec{DeviceActivation::kNeg};
  } else if (op == "ReduceSum") {
    scale = true;
  } else if (op == "ReduceSumSquare" || op == "ReduceL2") {
    before = ActivationSpec{DeviceActivation::kPow, 2.0f};
    scale = true;
    if (op == "ReduceL2") after = ActivationSpec{DeviceActivation::kSqrt};
  } else if (op == "ReduceL1") {
    before = ActivationSpec{DeviceActivation::kAbs};
    scale = true;
  }
  const int ix = v.in_id(0), iy = v.out_id(0);
  LoweredNode lowered;
  lowered.reads = {ix};
  if (rows == 0) return lowered;
  const int64_t count = rows * cols;
  if (before) lowered.scratch_bytes.push_back(count * sizeof(float));
  if (scale) lowered.derived.push_back({static_cast<float>(cols)});
  lowered.steps.push_back([=](const StepContext& c) {
    const float* x = F(c, ix);
    if (before) {
      float* mapped = static_cast<float*>(c.scratch[0]);
      absl::Status s =
          c.kernels.Activation(c.stream, *before, x, mapped, count);
      if (!s.ok()) return s;
      x = mapped;
    }
    absl::Status s = c.kernels.Pool2D(c.stream, args, x, F(c, iy));
    if (s.ok() && scale) {
      s = c.kernels.Binary(c.stream, {.op = DeviceBinaryOp::kMul,
                                      .a = F(c, iy),
                                      .a_shape = {rows},
                                      .b = c.derived[0],
                                      .b_shape = {1},
                                      .y = F(c, iy)});
    }
    if (s.ok() && after) {
      s = c.kernels.Activation(c.stream, *after, F(c, iy), F(c, iy), rows);
    }
    return s;
  });
  return lowered;
}

}  // namespace coalesce::device_ops
