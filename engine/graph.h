// Graph: a validated, topologically ordered ONNX graph with a kernel per node.
// Built once by Model and immutable afterwards, so any number of plans and
// executor instances read it concurrently. Tensors are named by value ids
// (indices into value_names).
#ifndef COALESCE_ENGINE_GRAPH_H_
#define COALESCE_ENGINE_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/aligned_buffer.h"
#include "engine/data_type.h"
#include "engine/neutral_plan.h"
#include "engine/op_kernel.h"
#include "engine/shape.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace coalesce {

class ExternalData;
class OpRegistry;

// An initializer or the value of a Constant node, stored once per Model.
// bytes() gives byte_size bytes: the elements, or for STRING the StringRef
// handles (engine/string_ref.h), which point into `string_bytes`. They live
// in `storage`, or, for a tensor read from external data
// (engine/external_data.h), in a read-only file mapping `mapping` keeps.
struct ConstantTensor {
  DataType dtype = DataType::kInvalid;
  Shape shape;
  size_t byte_size = 0;
  AlignedBuffer storage;                 // unless mapped
  const char* mapped = nullptr;          // external data (aligned elements)
  std::shared_ptr<const void> mapping;   // keeps `mapped` valid
  std::unique_ptr<char[]> string_bytes;  // STRING only

  const char* bytes() const {
    return mapped != nullptr ? mapped : storage.data();
  }
};

struct GraphNode {
  std::string name;
  std::string op_type;
  std::string domain;         // "" for ONNX's default domain
  NodeAttributes attributes;  // for device executors (engine/neutral_plan.h)
  // The operator's schema and the attributes it resolved (null when the
  // operator has none yet: engine/schema/op_schema.h).
  const OpSchema* schema = nullptr;
  std::shared_ptr<const OpAttributes> resolved;
  std::vector<int> inputs;  // value ids; -1 for an omitted optional input
  std::vector<int> outputs;
  std::unique_ptr<const OpKernel> kernel;
};

struct Graph {
  std::vector<std::string> value_names;
  // Indexed by value id; null unless the value is an initializer or Constant.
  // Shared: a model's packed form holds the same weights (engine/model.h).
  std::vector<std::shared_ptr<const ConstantTensor>> constants;
  std::vector<GraphNode> nodes;  // topological order; no Constant nodes
  std::vector<int> inputs;       // graph inputs that are not initializers
  std::vector<int> outputs;
};

// Validates `proto` and builds its Graph. InvalidArgument naming the problem:
// every unsupported operator at once, a node input that nothing defines, a
// value produced twice, a cycle, a bad attribute or initializer. External
// initializers are read through `external` (null: refused).
absl::StatusOr<Graph> BuildGraph(const onnx::GraphProto& proto, int64_t opset,
                                 const OpRegistry& registry,
                                 const ExternalData* external = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_GRAPH_H_
