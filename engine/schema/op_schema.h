// OpSchema: what an ONNX operator is, whichever device runs it: its
// attributes, validated and typed once when a model loads (OpAttributes),
// and its type and shape inference. One file per operator family under
// engine/schema/ defines them; schema_registry.cc lists the families.
//
// The resolved attributes travel with the graph (GraphNode::resolved) and
// every plan (PlanNode::resolved), so the CPU kernels (engine/ops/) and the
// device lowering (engine/device/device_ops*.cc) read the same typed struct
// and neither parses attributes again. The planner infers shapes through
// the schema (BuildNeutralPlan), not through a CPU kernel.
//
// Migration: operators without a schema keep parsing their attributes in
// their CPU kernel (OpNode) and the device lowering (NodeAttributes). A
// schema may resolve attributes while its inference still lives in the CPU
// kernel (infers() false): docs/engine.md lists which.
//
// Device-neutral (no ONNX protobuf, no kernels). Schemas and resolved
// attributes are immutable and thread-safe.
#ifndef COALESCE_ENGINE_SCHEMA_OP_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_OP_SCHEMA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/neutral_plan.h"

namespace coalesce {

// What resolution sees of a node.
struct SchemaNode {
  const NodeAttributes& attributes;
  int64_t opset = 0;   // the model's default-domain opset
  int num_inputs = 0;  // listed inputs, omitted optional ones included
  std::vector<bool> outputs_used;  // per listed output: named, not omitted
};

// A node's resolved attributes; ResolvedAs gives the family's struct.
class OpAttributes {
 public:
  virtual ~OpAttributes() = default;
};

class OpSchema {
 public:
  virtual ~OpSchema() = default;
  // Validates and types the node's attributes. InvalidArgument naming the
  // attribute; Unimplemented for a valid form the engine does not run.
  virtual absl::StatusOr<std::shared_ptr<const OpAttributes>> Resolve(
      const SchemaNode& node) const = 0;
  // False while the operator's inference still lives in its CPU kernel.
  virtual bool infers() const = 0;
  // Sets every output's dtype and shape from the inputs (`outputs` arrives
  // sized to the node's outputs). InvalidArgument when they do not fit.
  // REQUIRES: infers(); `attributes` came from this schema's Resolve.
  virtual absl::Status Infer(const OpAttributes& attributes,
                             absl::Span<const TensorInfo> inputs,
                             absl::Span<TensorInfo> outputs) const = 0;
};

// The OpAttributes holding a family's struct.
template <typename Attrs>
class AttributesOf : public OpAttributes {
 public:
  explicit AttributesOf(Attrs value) : value_(std::move(value)) {}
  const Attrs& value() const { return value_; }

 private:
  Attrs value_;
};

// The family struct of `attributes`; null when it holds another (or none).
template <typename Attrs>
const Attrs* ResolvedAs(const OpAttributes* attributes) {
  const auto* typed = dynamic_cast<const AttributesOf<Attrs>*>(attributes);
  return typed == nullptr ? nullptr : &typed->value();
}

// A schema from a family's two functions; `infer` may be null (inference
// still in the CPU kernel).
template <typename Attrs>
class FunctionSchema : public OpSchema {
 public:
  using ResolveFn = std::function<absl::StatusOr<Attrs>(const SchemaNode&)>;
  using InferFn = std::function<absl::Status(
      const Attrs&, absl::Span<const TensorInfo>, absl::Span<TensorInfo>)>;

  FunctionSchema(ResolveFn resolve, InferFn infer)
      : resolve_(std::move(resolve)), infer_(std::move(infer)) {}

  absl::StatusOr<std::shared_ptr<const OpAttributes>> Resolve(
      const SchemaNode& node) const override {
    absl::StatusOr<Attrs> attrs = resolve_(node);
    if (!attrs.ok()) return attrs.status();
    return std::make_shared<const AttributesOf<Attrs>>(*std::move(attrs));
  }
  bool infers() const override { return infer_ != nullptr; }
  absl::Status Infer(const OpAttributes& attributes,
                     absl::Span<const TensorInfo> inputs,
                     absl::Span<TensorInfo> outputs) const override {
    return infer_(static_cast<const AttributesOf<Attrs>&>(attributes).value(),
                  inputs, outputs);
  }

 private:
  ResolveFn resolve_;
  InferFn infer_;
};

// Schemas by (domain, op type). Builtin() holds every family's; filled once,
// then only read (thread-safe).
class SchemaRegistry {
 public:
  // The domain of the optimizer's fused operators (OpRegistry's too).
  static constexpr char kInternalDomain[] = "ai.coalesce.internal";

  static const SchemaRegistry& Builtin();

  // REQUIRES: not registered yet.
  void Register(const std::string& op_type,
                std::shared_ptr<const OpSchema> schema);
  void RegisterInternal(const std::string& op_type,
                        std::shared_ptr<const OpSchema> schema);
  // Null when the operator has no schema (yet). "" and "ai.onnx" are ONNX's
  // default domain.
  const OpSchema* Find(const std::string& domain,
                       const std::string& op_type) const;

 private:
  std::map<std::pair<bool, std::string>, std::shared_ptr<const OpSchema>>
      schemas_;  // keyed by (internal domain?, op type)
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_OP_SCHEMA_H_
