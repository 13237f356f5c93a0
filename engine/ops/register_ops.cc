#include "engine/ops/register_ops.h"

namespace coalesce {

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterBinaryOps(registry);
  RegisterConcatOp(registry);
  RegisterGemmOp(registry);
  RegisterMatMulOp(registry);
  RegisterReshapeOps(registry);
  RegisterSoftmaxOp(registry);
  RegisterTransposeOp(registry);
  RegisterArgMaxOp(registry);
  RegisterCastOp(registry);
  RegisterCompareOps(registry);
  RegisterExpandOps(registry);
  RegisterGatherOp(registry);
  RegisterIndexingOps(registry);
  RegisterEinsumOp(registry);
  RegisterQuantizeOps(registry);
  RegisterPadOp(registry);
  RegisterShapeOps(registry);
  RegisterSliceOps(registry);
  RegisterSqueezeOps(registry);
  RegisterUnaryMathOps(registry);
  RegisterPowPReluOps(registry);
  RegisterVariadicOps(registry);
  RegisterReduceOps(registry);
  RegisterNormalizationOps(registry);
  RegisterDropoutOp(registry);
  RegisterConvOps(registry);
  RegisterConvTransposeOp(registry);
  RegisterBatchNormOp(registry);
  RegisterPoolOps(registry);
  RegisterLrnOp(registry);
  RegisterResizeOps(registry);
  RegisterDepthSpaceOps(registry);
}

}  // namespace coalesce
