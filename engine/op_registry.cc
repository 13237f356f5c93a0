#include "engine/op_registry.h"

#include <algorithm>
#include <string>
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

namespace {

std::string Key(const std::string& domain, const std::string& op_type) {
  if (domain.empty() || domain == "ai.onnx") return op_type;
  return domain + ":" + op_type;
}

}  // namespace

void OpRegistry::Register(const std::string& op_type, OpFactory factory) {
  factories_[op_type] = std::move(factory);
}

void OpRegistry::RegisterInternal(const std::string& op_type,
                                  OpFactory factory) {
  factories_[Key(kInternalDomain, op_type)] = std::move(factory);
}

const OpFactory* OpRegistry::Find(const std::string& domain,
                                  const std::string& op_type) const {
  auto it = factories_.find(Key(domain, op_type));
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::OnnxOperators() const {
  std::vector<std::string> ops;
  for (const auto& [key, factory] : factories_) {
    if (key.find(':') == std::string::npos) ops.push_back(key);
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace coalesce
