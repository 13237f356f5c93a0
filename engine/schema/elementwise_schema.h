// Elementwise operators with attributes (engine/schema/op_schema.h):
//   IsNaN, IsInf (detect_positive, detect_negative; both default 1): FP32,
//   FP64, FP16 or BF16 in, BOOL of the input's shape out;
//   Mod (fmod 0: floored, the divisor's sign; 1: truncated): attributes
//   only, its inference (NumPy broadcasting, every arithmetic type) is still
//   the CPU kernel's (engine/ops/binary.cc).
#ifndef COALESCE_ENGINE_SCHEMA_ELEMENTWISE_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_ELEMENTWISE_SCHEMA_H_

namespace coalesce {

struct FloatClassAttrs {
  bool is_nan = false;  // IsNaN; else IsInf of the signs below
  bool positive = true;
  bool negative = true;
};

struct ModAttrs {
  bool fmod = false;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_ELEMENTWISE_SCHEMA_H_
