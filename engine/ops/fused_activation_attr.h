// The fused activation (engine/schema/activation_schema.h) in the CPU
// kernels' form (kernels/cpu/fused_activation.h).
#ifndef COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_
#define COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_

#include "absl/status/statusor.h"
#include "engine/op_kernel.h"
#include "engine/schema/activation_schema.h"
#include "kernels/cpu/fused_activation.h"

namespace coalesce {

kernels::FusedActivation ToKernelActivation(const FusedActivationAttr& attr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_
