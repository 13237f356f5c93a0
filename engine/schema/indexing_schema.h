// Index-driven operators whose meaning lives here (engine/schema/op_schema.h):
//   TopK (k from the attribute before opset 10, from the K input since, which
//   must be known while planning: it decides the output shape; axis, largest,
//   sorted): Values and int64 Indices, ties broken by the lower index;
//   OneHot (depth known while planning, values [off, on], axis): indices of
//   any numeric type, negative ones counted from depth, out-of-range ones
//   all `off`;
//   ScatterElements (axis; reduction none, add, mul from opset 16, max, min
//   from 18): data with updates written at the indices along axis, in order.
//   Einsum: the equation's contraction, with "..." broadcast as NumPy does;
//   GatherElements (axis): data's elements at the indices (INT64 or INT32,
//   data's rank) along axis, any element type;
//   GatherND (batch_dims): slices of data selected by index tuples (the
//   indices' last axis), any element type;
//   CumSum (exclusive, reverse; the axis input, one INT64 or INT32 value):
//   running sums of FP32, FP64, INT32, INT64, UINT32 or UINT64;
//   NonZero: the int64 coordinates [rank, count] of the nonzero elements of
//   a numeric tensor (a scalar counts as rank 1), in row-major order. Its
//   output shape depends on the data, so its input must be known while
//   planning (computed from constants or shapes); a NonZero of run-time
//   data is refused by name when the model is planned.
#ifndef COALESCE_ENGINE_SCHEMA_INDEXING_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_INDEXING_SCHEMA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/neutral_plan.h"
#include "engine/shape.h"

namespace coalesce {

struct TopKAttrs {
  int64_t k_attribute = -1;  // opset < 10; -1 when K is an input
  int64_t axis = -1;
  bool largest = true;
  bool sorted = true;
};

struct OneHotAttrs {
  int64_t axis = -1;
};

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

struct ScatterElementsAttrs {
  int64_t axis = 0;
  ScatterReduction reduction = ScatterReduction::kNone;
};

struct GatherElementsAttrs {
  int64_t axis = 0;
};

struct GatherNdAttrs {
  int64_t batch_dims = 0;
};

struct CumSumAttrs {
  bool exclusive = false;
  bool reverse = false;
};

// CumSum's axis: the one value of `axis` (INT64 or INT32, at `data`),
// normalized for an input of `shape` (a scalar has one axis).
absl::StatusOr<int64_t> CumSumAxis(const TensorInfo& axis, const void* data,
                                   const Shape& shape);

struct NonZeroAttrs {};

// True when element i of a tensor of `type` at `data` is not zero (-0.0 is
// zero; NaN is not). REQUIRES: `type` is numeric.
bool ElementIsNonZero(DataType type, const char* data, int64_t i);

struct EinsumAttrs {
  std::string equation;
};

// An Einsum equation bound to its operands' shapes: one letter per
// dimension of each operand (ellipses expanded into letters of their own),
// the output's letters, and every letter's size.
struct EinsumPlan {
  std::vector<std::string> inputs;  // letters of each operand, by dimension
  std::string output;
  std::vector<int64_t> size;  // by letter (char), 0 when unused
  Shape output_shape;
};

// OneHot's depth, a scalar known while planning (INT64, INT32, FP32, FP64).
absl::StatusOr<int64_t> OneHotDepth(const TensorInfo& depth);

// InvalidArgument for a malformed equation or operands that do not fit it.
absl::StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                      const std::vector<Shape>& operands);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_INDEXING_SCHEMA_H_
