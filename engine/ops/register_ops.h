// Registration of the built-in operators, one function per file in
// engine/ops/. Called once by OpRegistry::Builtin().
#ifndef COALESCE_ENGINE_OPS_REGISTER_OPS_H_
#define COALESCE_ENGINE_OPS_REGISTER_OPS_H_

namespace coalesce {

class OpRegistry;

void RegisterBinaryOps(OpRegistry& registry);  // Add, Sub, Mul, Div
void RegisterConcatOp(OpRegistry& registry);
void RegisterGemmOp(OpRegistry& registry);
void RegisterMatMulOp(OpRegistry& registry);
void RegisterReshapeOps(OpRegistry& registry);  // Identity, Flatten, Reshape
void RegisterSoftmaxOp(OpRegistry& registry);   // Softmax, LogSoftmax
void RegisterTransposeOp(OpRegistry& registry);

// Relu, Sigmoid, Tanh, Sqrt, Exp, Log, Reciprocal, Erf, Softplus, Softsign,
// LeakyRelu, Elu, Selu, HardSigmoid, Gelu, Clip, Floor, Ceil, Round, ...
void RegisterUnaryMathOps(OpRegistry& registry);
void RegisterPowPReluOps(OpRegistry& registry);  // Pow, PRelu
void RegisterVariadicOps(OpRegistry& registry);  // Sum, Max, Min, Mean
void RegisterReduceOps(
    OpRegistry& registry);  // ReduceSum, ReduceMean, ReduceMax
// LayerNormalization, InstanceNormalization, GroupNormalization
void RegisterNormalizationOps(OpRegistry& registry);
void RegisterDropoutOp(OpRegistry& registry);

void RegisterArgMaxOp(OpRegistry& registry);
void RegisterCastOp(OpRegistry& registry);
void RegisterCompareOps(
    OpRegistry& registry);  // Equal, Less, Greater, Not, Where
void RegisterExpandOps(OpRegistry& registry);  // Expand, Tile
void RegisterGatherOp(OpRegistry& registry);
// GatherElements, GatherND, ScatterND, ScatterElements, Trilu, CumSum, TopK,
// OneHot
void RegisterIndexingOps(OpRegistry& registry);
void RegisterEinsumOp(OpRegistry& registry);
void RegisterQuantizeOps(
    OpRegistry& registry);  // QuantizeLinear, DequantizeLinear
void RegisterPadOp(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);    // Shape, ConstantOfShape, Range
void RegisterSliceOps(OpRegistry& registry);    // Slice, Split
void RegisterSqueezeOps(OpRegistry& registry);  // Squeeze, Unsqueeze

// All of the above.
void RegisterConvOps(OpRegistry& registry);  // Conv, FusedConv (internal)
void RegisterConvTransposeOp(OpRegistry& registry);
void RegisterBatchNormOp(OpRegistry& registry);
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool
void RegisterPoolOps(OpRegistry& registry);
void RegisterLrnOp(OpRegistry& registry);
void RegisterResizeOps(OpRegistry& registry);      // Resize, Upsample
void RegisterDepthSpaceOps(OpRegistry& registry);  // DepthToSpace, SpaceToDepth

void RegisterBuiltinOps(OpRegistry& registry);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_REGISTER_OPS_H_
