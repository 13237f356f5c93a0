#include "engine/op_registry.h"

#include <utility>

#include "engine/ops/register_ops.h"

namespace coalesce {

const OpRegistry& OpRegistry::Builtin() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry();
    RegisterBuiltinOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(const std::string& op_type, OpFactory factory) {
  factories_[op_type] = std::move(factory);
}

const OpFactory* OpRegistry::Find(const std::string& op_type) const {
  auto it = factories_.find(op_type);
  return it == factories_.end() ? nullptr : &it->second;
}

}  // namespace coalesce
