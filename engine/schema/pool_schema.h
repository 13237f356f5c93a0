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
//
// ResolvePoolWindows is the one rule the CPU kernels and the device lowering
// size windows and pads with.
#ifndef COALESCE_ENGINE_SCHEMA_POOL_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_POOL_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/schema/conv_schema.h"
#include "engine/shape.h"

namespace coalesce {

inline constexpr size_t kMaxPoolSpatialAxes = 3;

// MaxPool and AveragePool.
struct PoolAttrs {
  bool max = true;
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel, strides, dilations, pads;  // per spatial axis
  bool ceil_mode = false;
  bool count_include_pad = false;     // AveragePool
  bool column_major_indices = false;  // MaxPool's storage_order
  bool channels_last = false;
};

// GlobalMaxPool and GlobalAveragePool.
struct GlobalPoolAttrs {
  bool max = true;
  bool channels_last = false;
};

// The windows along each spatial axis of an input whose spatial dims are
// `spatial`: output dims and resolved pads.
struct PoolWindows {
  std::vector<int64_t> out, pads_begin, pads_end;
};

// InvalidArgument when `spatial` has not one dim per kernel axis or an axis
// is smaller than its window.
absl::StatusOr<PoolWindows> ResolvePoolWindows(
    const PoolAttrs& attrs, const std::vector<int64_t>& spatial);

// An input's spatial dims: [N, C, spatial...], or [N, spatial..., C] when
// channels-last. REQUIRES: rank >= 2.
std::vector<int64_t> PoolSpatialDims(const Shape& x, bool channels_last);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_POOL_SCHEMA_H_
