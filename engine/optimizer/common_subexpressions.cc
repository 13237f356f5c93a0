// Common subexpressions: nodes that compute the same thing (same operator,
// domain and attributes, the same inputs) become one. Inputs are the same
// when they are the same value after earlier merges, or small constants of
// equal type, shape and value (exporters give every layer its own copy of
// 0 and -inf). What it is for: TorchScript exports of Hugging Face
// encoders build the attention mask once per layer, Where(mask, 0, -inf)
// over [B, 1, S, S], twelve times the same values (10% of BERT S=384's
// FP16 kernel time on the 2026-11-28 H200 run, BENCHMARKS.md).
//
// Random operators are never merged (each draws its own values), nor a
// node whose output is a graph output (its name is the model's signature).
// A graph with subgraphs (If, Loop, Scan) is left as it is: their bodies
// may name outer values, which a merge would rename. Nodes are visited in
// topological order, so a chain of duplicates merges in one pass.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

// Constants of at most this many elements are compared by value.
constexpr size_t kMaxComparedElements = 64;

bool HasSubgraph(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

bool NeverMerged(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (op.rfind("Random", 0) == 0 || op == "Multinomial" || op == "Bernoulli")
    return true;
  return node.output_size() == 0;
}

// The nodes in an order where each comes after the producers of its inputs
// (Kahn's; nodes on a cycle, which validation rejects later, are left out).
std::vector<onnx::NodeProto*> TopologicalOrder(GraphEditor& editor) {
  std::vector<onnx::NodeProto*> order;
  absl::flat_hash_map<const onnx::NodeProto*, int> waiting;
  absl::flat_hash_map<std::string, std::vector<onnx::NodeProto*>> readers;
  for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
    int count = 0;
    for (const std::string& in : node.input()) {
      if (in.empty() || editor.Producer(in) == nullptr) continue;
      readers[in].push_back(&node);
      ++count;
    }
    waiting[&node] = count;
    if (count == 0) order.push_back(&node);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (const std::string& out : order[i]->output()) {
      auto it = readers.find(out);
      if (it == readers.end()) continue;
      for (onnx::NodeProto* reader : it->second)
        if (--waiting[reader] == 0) order.push_back(reader);
    }
  }
  return order;
}

class Merger {
 public:
  explicit Merger(GraphEditor& editor) : editor_(editor) {}

  // True when it merged some node.
  bool Run() {
    bool merged = false;
    for (onnx::NodeProto* node : TopologicalOrder(editor_)) {
      for (std::string& in : *node->mutable_input()) {
        auto renamed = renames_.find(in);
        if (renamed != renames_.end()) in = renamed->second;
      }
      if (NeverMerged(*node)) continue;
      auto [it, first] = seen_.try_emplace(KeyOf(*node), node);
      if (first || !Replaceable(*node, *it->second)) continue;
      for (int i = 0; i < node->output_size(); ++i)
        if (!node->output(i).empty())
          renames_[node->output(i)] = it->second->output(i);
      editor_.Remove(node);
      merged = true;
    }
    // Readers not visited in order: nodes on a cycle (which validation
    // rejects later). Graph outputs are never renamed: a node writing one
    // is never removed.
    for (onnx::NodeProto& node : *editor_.graph().mutable_node())
      for (std::string& in : *node.mutable_input()) {
        auto renamed = renames_.find(in);
        if (renamed != renames_.end()) in = renamed->second;
      }
    return merged;
  }

 private:
  // Whether `node` may give way to `kept`: the same output count, and no
  // output of its is a graph output.
  bool Replaceable(const onnx::NodeProto& node,
                   const onnx::NodeProto& kept) const {
    if (node.output_size() != kept.output_size()) return false;
    for (const std::string& out : node.output())
      if (editor_.IsGraphOutput(out)) return false;
    return true;
  }

  // Every part length-prefixed, so no two different nodes share a key
  // whatever bytes their names and attributes hold; the outputs present
  // (an optional output left out is "") are part of it, so a merge never
  // renames a used output to an absent one.
  std::string KeyOf(const onnx::NodeProto& node) {
    std::vector<std::string> attributes;
    for (const onnx::AttributeProto& a : node.attribute())
      attributes.push_back(a.SerializeAsString());
    std::sort(attributes.begin(), attributes.end());
    std::string key;
    auto add = [&key](const std::string& part) {
      absl::StrAppend(&key, part.size(), ":", part);
    };
    add(node.domain());
    add(node.op_type());
    absl::StrAppend(&key, attributes.size(), ";");
    for (const std::string& a : attributes) add(a);
    absl::StrAppend(&key, node.input_size(), ";");
    for (const std::string& in : node.input()) add(InputKey(in));
    for (const std::string& out : node.output())
      absl::StrAppend(&key, out.empty() ? "0" : "1");
    return key;
  }

  // A small float or int64 constant by its type, shape and value; any other
  // input by its name.
  std::string InputKey(const std::string& value) {
    if (value.empty() || editor_.Initializer(value) == nullptr)
      return absl::StrCat("v:", value);
    auto cached = constant_keys_.find(value);
    if (cached != constant_keys_.end()) return cached->second;
    std::string key = absl::StrCat("v:", value);
    const onnx::TensorProto* t = editor_.Initializer(value);
    size_t elements = 1;
    for (int64_t d : t->dims()) elements *= static_cast<size_t>(d);
    if (elements <= kMaxComparedElements) {
      if (auto f = editor_.FloatValues(value)) {
        key =
            absl::StrCat("f:", absl::StrJoin(t->dims(), ","), ":",
                         absl::StrJoin(*f, ",", [](std::string* out, float x) {
                           uint32_t bits;
                           std::memcpy(&bits, &x, sizeof(bits));
                           absl::StrAppend(out, bits);
                         }));
      } else if (auto i = editor_.Int64Values(value)) {
        key = absl::StrCat("i:", absl::StrJoin(t->dims(), ","), ":",
                           absl::StrJoin(*i, ","));
      }
    }
    constant_keys_[value] = key;
    return key;
  }

  GraphEditor& editor_;
  absl::flat_hash_map<std::string, onnx::NodeProto*> seen_;
  absl::flat_hash_map<std::string, std::string> renames_;
  absl::flat_hash_map<std::string, std::string> constant_keys_;
};

}  // namespace

void MergeCommonSubexpressions(GraphEditor& editor) {
  for (const onnx::NodeProto& node : editor.graph().node())
    if (HasSubgraph(node)) return;
  if (Merger(editor).Run()) editor.Commit();
}

}  // namespace coalesce
