// Dead node removal: keeps the nodes some graph output depends on, and the
// initializers a kept node or an output reads. Graph inputs that are not
// initializers stay even when unused: they are the model's signature.
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "engine/optimizer/passes.h"

namespace coalesce {

void RemoveDeadNodes(GraphEditor& editor) {
  onnx::GraphProto& graph = editor.graph();
  absl::flat_hash_set<std::string> live;
  std::vector<std::string> work;
  for (const onnx::ValueInfoProto& out : graph.output())
    work.push_back(out.name());
  absl::flat_hash_set<const onnx::NodeProto*> kept;
  while (!work.empty()) {
    const std::string value = work.back();
    work.pop_back();
    if (!live.insert(value).second) continue;
    onnx::NodeProto* producer = editor.Producer(value);
    if (producer == nullptr || !kept.insert(producer).second) continue;
    for (const std::string& in : producer->input())
      if (!in.empty()) work.push_back(in);
  }
  for (onnx::NodeProto& node : *graph.mutable_node())
    if (!kept.contains(&node)) editor.Remove(&node);
  // A dropped initializer that is also listed as a graph input (older
  // exporters list weights there) leaves the input list too, or the model
  // would start asking for it.
  google::protobuf::RepeatedPtrField<onnx::TensorProto> used;
  absl::flat_hash_set<std::string> dropped;
  for (onnx::TensorProto& t : *graph.mutable_initializer()) {
    if (live.contains(t.name())) {
      *used.Add() = std::move(t);
    } else {
      dropped.insert(t.name());
    }
  }
  graph.mutable_initializer()->Swap(&used);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (onnx::ValueInfoProto& in : *graph.mutable_input())
    if (!dropped.contains(in.name())) *inputs.Add() = std::move(in);
  graph.mutable_input()->Swap(&inputs);
  editor.Commit();
}

}  // namespace coalesce
