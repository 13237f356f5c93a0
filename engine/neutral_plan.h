// NeutralPlan: a model planned for one set of input shapes, before any device
// is chosen. It is plain data, so every executor builds on it: the CPU's
// ExecutionPlan binds CPU kernels and a host arena to it, a device's
// GraphProgram (engine/device/graph_program.h) binds device kernels and
// device memory. What it holds:
//   - every value's dtype, shape and byte size; where it lives (a model
//     input or output, a constant known at plan time, or an intermediate);
//   - every node in topological order with its op type and attributes, and
//     whether the planner already computed it (folded: its outputs became
//     constants, such as the int64 shape arithmetic exporters emit).
// Built by the engine (BuildNeutralPlan, engine/neutral_planner.h), which does
// the shape and type inference and the constant folding once per shape set.
// Immutable; `owner` keeps every pointer in it (constants, attributes) alive.
#ifndef COALESCE_ENGINE_NEUTRAL_PLAN_H_
#define COALESCE_ENGINE_NEUTRAL_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/shape.h"

namespace coalesce {

class OpAttributes;

// What is known about a tensor at plan time: its type, its concrete shape
// and, when known, its value: initializers, constants, and outputs the planner
// computed (constant_data is then non-null).
struct TensorInfo {
  DataType dtype = DataType::kInvalid;
  Shape shape;
  const char* constant_data = nullptr;  // null unless known at plan time

  bool present() const { return dtype != DataType::kInvalid; }
};

// An ONNX node attribute of a kind a kernel reads (tensor and graph
// attributes never reach a plan: Constant nodes become constants).
struct NodeAttribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

// A node's attributes by name, with typed getters that fail (InvalidArgument
// naming the attribute) on a kind mismatch and return the default when the
// attribute is absent.
class NodeAttributes {
 public:
  void Set(const std::string& name, NodeAttribute value);
  bool Has(const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name,
                                 int64_t default_value) const;
  absl::StatusOr<float> GetFloat(const std::string& name,
                                 float default_value) const;
  absl::StatusOr<std::string> GetString(const std::string& name,
                                        const std::string& default_value) const;
  // Empty when absent.
  absl::StatusOr<std::vector<int64_t>> GetInts(const std::string& name) const;
  absl::StatusOr<std::vector<float>> GetFloats(const std::string& name) const;

 private:
  absl::StatusOr<const NodeAttribute*> Find(const std::string& name,
                                            NodeAttribute::Kind kind) const;
  std::map<std::string, NodeAttribute> values_;
};

// kConstant: a model constant or a value the planner computed.
// kIntermediate: produced by a node that runs, and not a model output.
enum class ValueStorage { kNone, kInput, kConstant, kIntermediate, kOutput };

struct PlannedValue {
  TensorInfo info;
  // Bytes in engine memory: elements times StorageByteSize (a STRING value
  // holds 16-byte handles, engine/string_ref.h).
  size_t byte_size = 0;
  ValueStorage storage = ValueStorage::kNone;
  int io_index = -1;  // for kInput / kOutput: the model input/output index
};

struct PlanNode {
  const std::string* name = nullptr;
  const std::string* op_type = nullptr;
  const std::string* domain = nullptr;  // "" for ONNX's default domain
  const NodeAttributes* attributes = nullptr;
  // The attributes the operator's schema resolved (engine/schema/op_schema.h:
  // read them with ResolvedAs); null when the operator has no schema yet.
  const OpAttributes* resolved = nullptr;
  std::vector<int> inputs;  // value ids; -1 for an omitted optional input
  std::vector<int> outputs;
  bool folded = false;  // computed by the planner; executors skip it
};

struct NeutralPlan {
  int64_t opset = 0;                 // the model's default-domain opset
  std::vector<PlannedValue> values;  // by value id
  const std::vector<std::string>* value_names = nullptr;  // by value id
  std::vector<PlanNode> nodes;                            // topological order
  std::vector<int> inputs;   // value ids, model input order
  std::vector<int> outputs;  // value ids, model output order
  // Owns what the pointers above point to (the model, folded values).
  std::vector<std::shared_ptr<const void>> owner;
};

// Builds the NeutralPlan of one model for full input shapes (batch dimension
// included). InvalidArgument naming the input or node when they do not fit.
using NeutralPlanner =
    std::function<absl::StatusOr<std::shared_ptr<const NeutralPlan>>(
        const std::vector<Shape>& input_shapes)>;

// "node 'name' (op 'Type')", the way every error names a node.
std::string NodeLabel(const PlanNode& node);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_NEUTRAL_PLAN_H_
