// The operator families of engine/schema/, each registering its schemas
// (op_schema.h). Adding a family: its file, a line here, and a line in
// RegisterBuiltinSchemas (schema_families.cc).
#ifndef COALESCE_ENGINE_SCHEMA_SCHEMA_FAMILIES_H_
#define COALESCE_ENGINE_SCHEMA_SCHEMA_FAMILIES_H_

namespace coalesce {

class SchemaRegistry;

void RegisterConvSchemas(SchemaRegistry& registry);  // Conv, FusedConv
void RegisterGemmSchemas(SchemaRegistry& registry);  // Gemm, MatMul, fused
// TopK, OneHot, ScatterElements, Einsum
void RegisterIndexingSchemas(SchemaRegistry& registry);
// LayerNormalization, InstanceNormalization, GroupNormalization
void RegisterNormalizationSchemas(SchemaRegistry& registry);
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool
void RegisterPoolSchemas(SchemaRegistry& registry);
void RegisterQuantizeSchemas(SchemaRegistry& registry);  // Q/DQ Linear
void RegisterResizeSchemas(SchemaRegistry& registry);    // Resize, Upsample
void RegisterUnarySchemas(SchemaRegistry& registry);     // float unary math
void RegisterTensorSchemas(
    SchemaRegistry& registry);  // Transpose, Concat, Gather
void RegisterElementwiseSchemas(SchemaRegistry& registry);  // IsNaN/IsInf, Mod
void RegisterSliceSchemas(SchemaRegistry& registry);        // Slice, Split, Pad
void RegisterReduceSchemas(SchemaRegistry& registry);       // ReduceX, ArgMax
void RegisterSoftmaxSchemas(SchemaRegistry& registry);      // (Log)Softmax

void RegisterBuiltinSchemas(SchemaRegistry& registry);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_SCHEMA_FAMILIES_H_
