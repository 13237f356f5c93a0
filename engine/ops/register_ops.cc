#include "engine/ops/register_ops.h"

namespace coalesce {

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterActivationOps(registry);
  RegisterBinaryOps(registry);
  RegisterConcatOp(registry);
  RegisterGemmOp(registry);
  RegisterMatMulOp(registry);
  RegisterReshapeOps(registry);
  RegisterSoftmaxOp(registry);
  RegisterTransposeOp(registry);
}

}  // namespace coalesce
