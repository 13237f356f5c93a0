#include "engine/schema/op_schema.h"

#include "engine/schema/schema_families.h"

namespace coalesce {

const SchemaRegistry& SchemaRegistry::Builtin() {
  static const SchemaRegistry* const registry = [] {
    auto* r = new SchemaRegistry();
    RegisterBuiltinSchemas(*r);
    return r;
  }();
  return *registry;
}

void SchemaRegistry::Register(const std::string& op_type,
                              std::shared_ptr<const OpSchema> schema) {
  schemas_[{false, op_type}] = std::move(schema);
}

void SchemaRegistry::RegisterInternal(const std::string& op_type,
                                      std::shared_ptr<const OpSchema> schema) {
  schemas_[{true, op_type}] = std::move(schema);
}

const OpSchema* SchemaRegistry::Find(const std::string& domain,
                                     const std::string& op_type) const {
  bool internal = false;
  if (domain == kInternalDomain) {
    internal = true;
  } else if (!domain.empty() && domain != "ai.onnx") {
    return nullptr;
  }
  auto it = schemas_.find({internal, op_type});
  return it == schemas_.end() ? nullptr : it->second.get();
}

}  // namespace coalesce
