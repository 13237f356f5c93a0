// GraphEditor: the lookups the optimizer passes need on an onnx::GraphProto
// (who produces and who consumes a value, which values are constants), and
// the edits they make (new initializers, node removal). Maps are rebuilt by
// Refresh() after a pass changes the graph. Not thread-safe.
#ifndef COALESCE_ENGINE_OPTIMIZER_GRAPH_EDITOR_H_
#define COALESCE_ENGINE_OPTIMIZER_GRAPH_EDITOR_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/shape.h"
#include "onnx/onnx_pb.h"

namespace coalesce {

class ExternalData;

class GraphEditor {
 public:
  // `external` reads external initializers (null: they read as unknown).
  explicit GraphEditor(onnx::GraphProto* graph,
                       const ExternalData* external = nullptr);

  onnx::GraphProto& graph() { return *graph_; }
  void Refresh();

  // Null when `value` is a graph input, an initializer or unknown.
  onnx::NodeProto* Producer(const std::string& value) const;
  // Node inputs reading `value` (a node reading it twice counts twice), plus
  // one if it is a graph output.
  int UseCount(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const;
  // True when `value` has exactly one use, by a node, and is not an output:
  // the producer's result may then be fused into that node.
  bool HasSingleNodeUse(const std::string& value) const;
  // The one node reading `value` when HasSingleNodeUse(value), else null.
  onnx::NodeProto* SoleConsumer(const std::string& value) const;

  // A tensor's value (an initializer or a tensor attribute), external data
  // included; errors as ImportTensor's.
  absl::StatusOr<std::unique_ptr<ConstantTensor>> ReadTensor(
      const onnx::TensorProto& tensor) const;

  // Null unless `value` is an initializer.
  const onnx::TensorProto* Initializer(const std::string& value) const;
  // A float initializer's values and dims; nullopt when `value` is not one.
  std::optional<std::vector<float>> FloatValues(const std::string& value,
                                                Shape* dims = nullptr) const;
  // An int64 initializer's values (a shape, axes); nullopt when `value` is
  // not one.
  std::optional<std::vector<int64_t>> Int64Values(
      const std::string& value) const;
  // A scalar (or single-element) float initializer's value.
  std::optional<float> FloatScalar(const std::string& value) const;

  // Adds a float initializer named after `base` (made unique) and returns
  // its name.
  std::string AddFloatInitializer(const std::string& base, const Shape& dims,
                                  const std::vector<float>& values);
  // Adds a 1-D int64 initializer named after `base` (made unique) and
  // returns its name.
  std::string AddInt64Initializer(const std::string& base,
                                  const std::vector<int64_t>& values);
  void AddInitializer(onnx::TensorProto tensor);
  std::string UniqueName(const std::string& base);

  // Marks `node` for removal; Commit() erases marked nodes and refreshes.
  void Remove(onnx::NodeProto* node);
  void Commit();

 private:
  std::string AddRawInitializer(const std::string& base, int type,
                                const Shape& dims, const void* data,
                                size_t bytes);

  onnx::GraphProto* graph_;
  const ExternalData* external_;
  absl::flat_hash_map<std::string, onnx::NodeProto*> producers_;
  absl::flat_hash_map<std::string, int> uses_;
  absl::flat_hash_map<std::string, onnx::NodeProto*> last_consumer_;
  absl::flat_hash_set<std::string> outputs_;
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers_;
  absl::flat_hash_set<std::string> names_;
  absl::flat_hash_set<const onnx::NodeProto*> removed_;
  int64_t next_id_ = 0;
};

// Attribute helpers for the passes.
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node,
                                     const std::string& name);
void SetStringAttr(onnx::NodeProto& node, const std::string& name,
                   const std::string& value);
void SetFloatAttr(onnx::NodeProto& node, const std::string& name, float value);
bool IsDefaultDomain(const onnx::NodeProto& node);
// A move: Reshape, Transpose, Squeeze, Unsqueeze, Flatten or Identity of
// ONNX's domain (its output is its input 0's elements, re-indexed).
bool IsMove(const onnx::NodeProto& node);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPTIMIZER_GRAPH_EDITOR_H_
