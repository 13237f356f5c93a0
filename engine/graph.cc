#include "engine/graph.h"

#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

bool IsConstantNode(const onnx::NodeProto& node) {
  return node.op_type() == "Constant" && IsDefaultDomain(node.domain());
}

std::string NodeLabel(const onnx::NodeProto& node) {
  return absl::StrCat("node '", node.name(), "' (op '", node.op_type(), "')");
}

// One message naming every node whose operator is not implemented.
absl::Status CheckOperators(const onnx::GraphProto& proto,
                            const OpRegistry& registry) {
  std::vector<std::string> unsupported;
  for (const onnx::NodeProto& node : proto.node()) {
    if (IsConstantNode(node)) continue;
    if (registry.Find(node.domain(), node.op_type()) == nullptr) {
      unsupported.push_back(IsDefaultDomain(node.domain())
                                ? NodeLabel(node)
                                : absl::StrCat(NodeLabel(node), " in domain '",
                                               node.domain(), "'"));
    }
  }
  if (unsupported.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported operators: ", absl::StrJoin(unsupported, ", ")));
}

// Builds the Graph step by step; value ids are assigned on first sight.
class GraphBuilder {
 public:
  GraphBuilder(const onnx::GraphProto& proto, int64_t opset,
               const ExternalData* external, const OpRegistry& registry)
      : proto_(proto),
        opset_(opset),
        external_(external),
        registry_(registry) {}

  absl::StatusOr<Graph> Build() {
    if (absl::Status s = CheckOperators(proto_, registry_); !s.ok()) return s;
    if (absl::Status s = AddConstants(); !s.ok()) return s;
    if (absl::Status s = AddInputs(); !s.ok()) return s;
    absl::StatusOr<std::vector<int>> order = SortNodes();
    if (!order.ok()) return order.status();
    for (int index : *order) {
      if (absl::Status s = AddNode(proto_.node(index)); !s.ok()) return s;
    }
    if (absl::Status s = AddOutputs(); !s.ok()) return s;
    return std::move(graph_);
  }

 private:
  int ValueId(const std::string& name) {
    auto [it, inserted] = ids_.try_emplace(name, graph_.value_names.size());
    if (inserted) {
      graph_.value_names.push_back(name);
      graph_.constants.emplace_back();
    }
    return it->second;
  }

  bool IsDefined(const std::string& name) const {
    return defined_.contains(name);
  }

  absl::Status Define(const std::string& name, const std::string& by) {
    if (!defined_.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "value '", name, "' is defined twice (again by ", by, ")"));
    }
    return absl::OkStatus();
  }

  absl::Status AddConstants();
  absl::Status AddInputs();
  absl::StatusOr<absl::flat_hash_map<std::string, int>> MapProducers();
  absl::StatusOr<std::vector<int>> SortNodes();
  absl::StatusOr<std::vector<int>> KahnOrder(
      std::vector<int> pending, const std::vector<std::vector<int>>& consumers);
  absl::Status AddNode(const onnx::NodeProto& node);
  absl::Status AddOutputs();

  const onnx::GraphProto& proto_;
  int64_t opset_;
  const ExternalData* external_;
  const OpRegistry& registry_;
  Graph graph_;
  absl::flat_hash_map<std::string, int> ids_;
  absl::flat_hash_set<std::string> defined_;
};

absl::Status GraphBuilder::AddConstants() {
  for (const onnx::TensorProto& tensor : proto_.initializer()) {
    absl::StatusOr<std::unique_ptr<ConstantTensor>> c =
        ImportTensor(tensor, external_);
    if (!c.ok()) return c.status();
    if (absl::Status s = Define(tensor.name(), "an initializer"); !s.ok())
      return s;
    graph_.constants[ValueId(tensor.name())] = *std::move(c);
  }
  for (const onnx::NodeProto& node : proto_.node()) {
    if (!IsConstantNode(node)) continue;
    if (node.output_size() != 1) {
      return absl::InvalidArgumentError(NodeLabel(node) +
                                        " must have one output");
    }
    absl::StatusOr<std::unique_ptr<ConstantTensor>> c =
        ImportConstantNode(node, external_);
    if (!c.ok()) return c.status();
    if (absl::Status s = Define(node.output(0), NodeLabel(node)); !s.ok())
      return s;
    graph_.constants[ValueId(node.output(0))] = *std::move(c);
  }
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddInputs() {
  for (const onnx::ValueInfoProto& input : proto_.input()) {
    if (IsDefined(input.name())) continue;  // IR < 4 lists initializers too
    if (absl::Status s = Define(input.name(), "a graph input"); !s.ok())
      return s;
    graph_.inputs.push_back(ValueId(input.name()));
  }
  return absl::OkStatus();
}

// Maps each value a (non-Constant) node produces to that node.
absl::StatusOr<absl::flat_hash_map<std::string, int>>
GraphBuilder::MapProducers() {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < proto_.node_size(); ++i) {
    const onnx::NodeProto& node = proto_.node(i);
    if (IsConstantNode(node)) continue;
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      if (IsDefined(out) || !producer.emplace(out, i).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("value '", out, "' is defined twice (again by ",
                         NodeLabel(node), ")"));
      }
    }
  }
  return producer;
}

// Kahn's algorithm over the non-Constant nodes, keeping file order among
// ready nodes.
absl::StatusOr<std::vector<int>> GraphBuilder::SortNodes() {
  absl::StatusOr<absl::flat_hash_map<std::string, int>> producer =
      MapProducers();
  if (!producer.ok()) return producer.status();
  const int n = proto_.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto& node = proto_.node(i);
    if (IsConstantNode(node)) {
      pending[i] = -1;
      continue;
    }
    for (const std::string& in : node.input()) {
      if (in.empty() || IsDefined(in)) continue;
      auto it = producer->find(in);
      if (it == producer->end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(node), " reads '", in,
                         "', which is neither a graph input, an initializer "
                         "nor a node output"));
      }
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  return KahnOrder(std::move(pending), consumers);
}

absl::StatusOr<std::vector<int>> GraphBuilder::KahnOrder(
    std::vector<int> pending, const std::vector<std::vector<int>>& consumers) {
  const int n = static_cast<int>(pending.size());
  std::deque<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push_back(c);
  }
  std::vector<std::string> stuck;
  for (int i = 0; i < n; ++i)
    if (pending[i] > 0) stuck.push_back(NodeLabel(proto_.node(i)));
  if (!stuck.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph has a cycle through ", absl::StrJoin(stuck, ", ")));
  }
  return order;
}

absl::Status GraphBuilder::AddNode(const onnx::NodeProto& proto) {
  GraphNode node;
  node.name = proto.name();
  node.op_type = proto.op_type();
  node.domain = IsDefaultDomain(proto.domain()) ? "" : proto.domain();
  absl::StatusOr<OpNode> op_node = OpNode::Resolve(proto, opset_);
  if (!op_node.ok()) {
    return absl::Status(
        op_node.status().code(),
        absl::StrCat(NodeLabel(proto), ": ", op_node.status().message()));
  }
  node.attributes = op_node->attributes();
  node.schema = op_node->schema();
  node.resolved = op_node->resolved();
  for (const std::string& in : proto.input()) {
    node.inputs.push_back(in.empty() ? -1 : ValueId(in));
  }
  for (const std::string& out : proto.output()) {
    node.outputs.push_back(out.empty() ? -1 : ValueId(out));
    if (!out.empty()) defined_.insert(out);
  }
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
      (*registry_.Find(proto.domain(), proto.op_type()))(*op_node);
  if (!kernel.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(proto), ": ", kernel.status().message()));
  }
  node.kernel = *std::move(kernel);
  graph_.nodes.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddOutputs() {
  for (const onnx::ValueInfoProto& output : proto_.output()) {
    if (!IsDefined(output.name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", output.name(), "' is not produced by any node"));
    }
    graph_.outputs.push_back(ValueId(output.name()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> BuildGraph(const onnx::GraphProto& proto, int64_t opset,
                                 const OpRegistry& registry,
                                 const ExternalData* external) {
  return GraphBuilder(proto, opset, external, registry).Build();
}

}  // namespace coalesce
