#include "engine/schema/schema_families.h"

namespace coalesce {

void RegisterBuiltinSchemas(SchemaRegistry& registry) {
  RegisterConvSchemas(registry);
  RegisterGemmSchemas(registry);
  RegisterIndexingSchemas(registry);
  RegisterSliceSchemas(registry);
  RegisterElementwiseSchemas(registry);
  RegisterTensorSchemas(registry);
  RegisterUnarySchemas(registry);
  RegisterResizeSchemas(registry);
  RegisterQuantizeSchemas(registry);
  RegisterNormalizationSchemas(registry);
  RegisterPoolSchemas(registry);
  RegisterReduceSchemas(registry);
  RegisterSoftmaxSchemas(registry);
}

}  // namespace coalesce
