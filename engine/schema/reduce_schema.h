// The ReduceX family (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp), FP32. The axes come from the `axes` attribute before
// opset 18 (ReduceSum: 13) and from an optional int64 input since, which
// must then be known while planning (it decides the output shape).
// `keepdims` (default 1) keeps reduced dimensions as 1. With no axes, every
// dimension is reduced, unless `noop_with_empty_axes` (axes-input opsets
// only) makes the node an identity.
// ArgMax (axis, keepdims, select_last_index from opset 12): the int64
// index of the largest FP32, INT64 or INT32 element along one axis, ties
// to the first (or the last).
#ifndef COALESCE_ENGINE_SCHEMA_REDUCE_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_REDUCE_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/neutral_plan.h"
#include "engine/shape.h"

namespace coalesce {

struct ReduceAttrs {
  std::vector<int64_t> axes;  // the attribute, when the opset has one
  bool axes_from_input = false;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
};

struct ArgMaxAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last = false;
};

// One flag per dimension of `shape`: reduced or not. `axes_input` is the
// node's input 1 (absent: TensorInfo{}); its values come from `axes_data`
// when given (at run time), else from its constant data. InvalidArgument
// for an axis out of range or listed twice, or axes not known.
absl::StatusOr<std::vector<bool>> ReducedDims(const ReduceAttrs& attrs,
                                              const Shape& shape,
                                              const TensorInfo& axes_input,
                                              const char* axes_data = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_REDUCE_SCHEMA_H_
