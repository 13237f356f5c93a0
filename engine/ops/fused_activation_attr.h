// The activation attributes the graph optimizer puts on the fused operators
// it creates (FusedConv, FusedGemm, FusedMatMul in the internal domain):
// "activation" (Relu, LeakyRelu, Clip, Sigmoid, Tanh; absent for none),
// "activation_alpha" and "activation_beta" (LeakyRelu's slope, Clip's bounds).
#ifndef COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_
#define COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_

#include "absl/status/statusor.h"
#include "engine/op_kernel.h"
#include "kernels/cpu/fused_activation.h"

namespace coalesce {

absl::StatusOr<kernels::FusedActivation> ParseFusedActivation(
    const OpNode& node);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_FUSED_ACTIVATION_ATTR_H_
