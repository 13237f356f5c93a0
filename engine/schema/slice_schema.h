// Data movement along axes whose meaning lives here (engine/schema/
// op_schema.h), shared by the CPU kernels (engine/ops/slice.cc, pad.cc) and
// the device lowering (engine/device/device_ops_movement.cc):
//   Slice: starts/ends/axes attributes before opset 10, starts/ends/axes/
//   steps inputs from 10 (known while planning); negative indices count
//   from the end and are clamped to the axis; steps may be negative.
//   Split (axis): `split` attribute before opset 13, optional input from 13;
//   without sizes the axis splits evenly, from opset 18 into `num_outputs`
//   chunks of ceil(dim / n), the last smaller.
//   Pad (mode constant, reflect or edge): pads and `value` attributes
//   before opset 11, pads and optional constant_value inputs from 11, an
//   optional axes input from 18. Pads are [begins..., ends...]; negative
//   pads crop.
// Any element type. Every helper takes `data`, the inputs' memory at run
// time (empty when planning: constant data is read instead).
#ifndef COALESCE_ENGINE_SCHEMA_SLICE_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_SLICE_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/neutral_plan.h"
#include "engine/shape.h"

namespace coalesce {

struct SliceAttrs {
  bool from_inputs = true;                  // opset >= 10
  std::vector<int64_t> starts, ends, axes;  // the attributes before 10
};

// Where a slice starts and how it steps along each axis of the data.
struct SliceSpec {
  Shape out_shape;
  std::vector<int64_t> start;  // per data axis
  std::vector<int64_t> step;
};

absl::StatusOr<SliceSpec> ResolveSliceSpec(
    const SliceAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data);

struct SplitAttrs {
  int64_t axis = 0;
  bool split_from_input = true;  // opset >= 13
  bool ceil_chunks = false;      // opset >= 18
  std::vector<int64_t> split;    // the attribute before 13
};

// The size of each of `num_outputs` parts of an axis of `dim`.
absl::StatusOr<std::vector<int64_t>> SplitSizes(
    const SplitAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data, int64_t dim, size_t num_outputs);

enum class PadMode { kConstant, kReflect, kEdge };

struct PadAttrs {
  PadMode mode = PadMode::kConstant;
  bool from_inputs = true;    // opset >= 11
  std::vector<int64_t> pads;  // the attribute before 11
  float value = 0.0f;         // the attribute before 11
};

// The full [begins..., ends...] pads of every axis of input 0.
absl::StatusOr<std::vector<int64_t>> PadAmounts(
    const PadAttrs& attrs, absl::Span<const TensorInfo> in,
    const std::vector<const char*>& data);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_SLICE_SCHEMA_H_
