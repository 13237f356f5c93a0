// FP16 operands for the device registry's products (device_ops_internal.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/device/device_ops_internal.h"

namespace coalesce::device_ops {

HalfOperand AddHalfOperand(const NodeView& v, int input, LoweredNode& lowered) {
  const PlannedValue& value = v.in(input);
  const int64_t count = Count(value.info.shape);
  HalfOperand operand;
  if (value.storage == ValueStorage::kConstant &&
      value.info.constant_data != nullptr) {
    operand.derived = static_cast<int>(lowered.derived_half.size());
    lowered.derived_half.push_back(
        {reinterpret_cast<const float*>(value.info.constant_data), count});
    return operand;
  }
  operand.scratch = AddHalfScratch(count, lowered);
  const int id = v.in_id(input);
  const int scratch = operand.scratch;
  lowered.reads.push_back(id);
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.ToHalf(c.stream, F(c, id),
                            static_cast<Half*>(c.scratch[scratch]), count);
  });
  return operand;
}

int AddHalfScratch(int64_t count, LoweredNode& lowered) {
  lowered.scratch_bytes.push_back(static_cast<size_t>(count) * sizeof(Half));
  return static_cast<int>(lowered.scratch_bytes.size()) - 1;
}

}  // namespace coalesce::device_ops
