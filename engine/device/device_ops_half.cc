// 16-bit operands (FP16 and BF16 modes) for the device registry's products
// (device_ops_internal.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/device/device_ops_internal.h"

namespace coalesce::device_ops {

HalfOperand AddHalfOperand(const NodeView& v, int input, LoweredNode& lowered,
                           const int64_t* oihw) {
  const PlannedValue& value = v.in(input);
  const int64_t count = Count(value.info.shape);
  const DeviceFloat type = v.options().activations;
  HalfOperand operand;
  if (value.storage == ValueStorage::kConstant &&
      value.info.constant_data != nullptr) {
    operand.converted = AddConvertedConstant(v, input, type, oihw, lowered);
    return operand;
  }
  const int id = v.in_id(input);
  lowered.reads.push_back(id);
  // Storage holds float32 or the mode's one 16-bit type (device_storage.h).
  if (v.in_type(input) == type) {
    operand.value = id;
    return operand;
  }
  operand.scratch = AddHalfScratch(count, lowered);
  const int scratch = operand.scratch;
  lowered.steps.push_back([=](const StepContext& c) {
    return c.kernels.ToHalf(c.stream, F(c, id),
                            static_cast<Half*>(c.scratch[scratch]), count,
                            type);
  });
  return operand;
}

int AddConvertedConstant(const NodeView& v, int input, DeviceFloat type,
                         const int64_t* oihw, LoweredNode& lowered) {
  const PlannedValue& value = v.in(input);
  LoweredNode::ConvertedConstant constant;
  constant.source = reinterpret_cast<const float*>(value.info.constant_data);
  constant.count = Count(value.info.shape);
  constant.type = type;
  if (oihw != nullptr) {
    for (int d = 0; d < 4; ++d) constant.oihw[d] = oihw[d];
  }
  lowered.converted.push_back(constant);
  return static_cast<int>(lowered.converted.size()) - 1;
}

int AddHalfScratch(int64_t count, LoweredNode& lowered) {
  lowered.scratch_bytes.push_back(static_cast<size_t>(count) * sizeof(Half));
  return static_cast<int>(lowered.scratch_bytes.size()) - 1;
}

}  // namespace coalesce::device_ops
