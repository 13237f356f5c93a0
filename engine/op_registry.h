// OpRegistry: maps an ONNX operator type (default domain) to the factory that
// builds its OpKernel for one node. Builtin() holds every operator this engine
// implements; adding an operator is one file under engine/ops/ plus one line
// in engine/ops/register_ops.cc. Operators of the ONNX default domain are
// keyed by op type; the fused operators the graph optimizer creates live in
// kInternalDomain, which models cannot import. A registry is filled once and
// then only read; reading is thread-safe.
#ifndef COALESCE_ENGINE_OP_REGISTRY_H_
#define COALESCE_ENGINE_OP_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/op_kernel.h"

namespace coalesce {

// Builds the kernel for one node; InvalidArgument for a bad attribute.
using OpFactory = std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(
    const OpNode& node)>;

class OpRegistry {
 public:
  // The domain of the optimizer's fused operators (FusedConv, ...).
  static constexpr char kInternalDomain[] = "ai.coalesce.internal";

  // The process-wide registry of built-in operators.
  static const OpRegistry& Builtin();

  // REQUIRES: (domain, op_type) not yet registered. An empty domain (or
  // "ai.onnx") is ONNX's default domain.
  void Register(const std::string& op_type, OpFactory factory);
  void RegisterInternal(const std::string& op_type, OpFactory factory);

  // Null when the operator is not supported.
  const OpFactory* Find(const std::string& domain,
                        const std::string& op_type) const;
  const OpFactory* Find(const std::string& op_type) const {
    return Find("", op_type);
  }

  // The default-domain operators registered, sorted by name (the fused
  // internal ones are not listed).
  std::vector<std::string> OnnxOperators() const;

 private:
  absl::flat_hash_map<std::string, OpFactory> factories_;
};

// Factory for a kernel type constructible from (const OpNode&) that has a
// static Create returning StatusOr<std::unique_ptr<OpKernel>>.
template <typename Kernel>
OpFactory FactoryOf() {
  return [](const OpNode& node) { return Kernel::Create(node); };
}

// Factory for a kernel of an operator with a schema: constructible from
// (const OpNode&, const Attrs&), Attrs being the family's resolved struct.
template <typename Kernel, typename Attrs>
OpFactory SchemaFactoryOf() {
  return [](const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    const Attrs* attrs = node.resolved_as<Attrs>();
    if (attrs == nullptr) {
      return absl::InternalError(
          "the operator's schema resolved no attributes of its family");
    }
    return std::make_unique<Kernel>(node, *attrs);
  };
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OP_REGISTRY_H_
