#include "engine/schema/schema_families.h"

namespace coalesce {

void RegisterBuiltinSchemas(SchemaRegistry& registry) {
  RegisterConvSchemas(registry);
  RegisterGemmSchemas(registry);
  RegisterNormalizationSchemas(registry);
  RegisterSoftmaxSchemas(registry);
}

}  // namespace coalesce
