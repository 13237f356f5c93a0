// Registration of the built-in operators, one function per file in
// engine/ops/. Called once by OpRegistry::Builtin().
#ifndef COALESCE_ENGINE_OPS_REGISTER_OPS_H_
#define COALESCE_ENGINE_OPS_REGISTER_OPS_H_

namespace coalesce {

class OpRegistry;

void RegisterActivationOps(OpRegistry& registry);  // Relu, Sigmoid, Tanh
void RegisterBinaryOps(OpRegistry& registry);      // Add, Sub, Mul, Div
void RegisterConcatOp(OpRegistry& registry);
void RegisterGemmOp(OpRegistry& registry);
void RegisterMatMulOp(OpRegistry& registry);
void RegisterReshapeOps(OpRegistry& registry);  // Identity, Flatten, Reshape
void RegisterSoftmaxOp(OpRegistry& registry);
void RegisterTransposeOp(OpRegistry& registry);

// All of the above.
void RegisterBuiltinOps(OpRegistry& registry);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_REGISTER_OPS_H_
