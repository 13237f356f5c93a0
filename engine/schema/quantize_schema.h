// QuantizeLinear and DequantizeLinear (opsets 10 to 21), whose meaning
// lives here (engine/schema/op_schema.h): FP32 scales, per tensor or per
// channel along `axis`, with an optional zero point that gives the
// quantized type (INT8, UINT8, INT16, UINT16; DequantizeLinear also INT32,
// which quantized biases use). Without a zero point QuantizeLinear writes
// UINT8, or `output_dtype` (opset 21). Blocked quantization (block_size) and
// the float8 types are refused at load.
//
// QuantizeLinear is saturate(round_half_to_even(x / scale) + zero_point)
// (NaN gives 0); DequantizeLinear is (x - zero_point) * scale, the
// difference taken in integers.
#ifndef COALESCE_ENGINE_SCHEMA_QUANTIZE_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_QUANTIZE_SCHEMA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/shape.h"

namespace coalesce {

struct QuantizeAttrs {
  bool quantize = true;  // QuantizeLinear; false: DequantizeLinear
  int64_t axis = 1;
  DataType default_output = DataType::kUint8;  // without a zero point
};

// A tensor quantized per tensor (channels = 1) or along an axis, viewed as
// [outer, channels, inner].
struct QuantChannels {
  int64_t outer = 1, channels = 1, inner = 1;
};

// The layout of x for a scale of `scale` shape: per tensor when the scale
// holds one value, else per channel along attrs.axis.
absl::StatusOr<QuantChannels> QuantizeLayout(const QuantizeAttrs& attrs,
                                             const Shape& x,
                                             const Shape& scale);

// INT8, UINT8, INT16, UINT16, and INT32 when `allow_int32`.
bool IsQuantizedType(DataType t, bool allow_int32);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_QUANTIZE_SCHEMA_H_
