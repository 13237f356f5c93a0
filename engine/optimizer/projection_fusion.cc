// Shared-input projection fusion (graph_optimizer.h, pass 7): the dense
// layers y_i = x W_i + B_i that read one input x (MatMul, or FusedMatMul
// without activation or residual, by a 2-D float weight; attention's Q, K
// and V projections) become one FusedMatMul by the weights' columns side by
// side, [W_1 .. W_n], with bias [B_1 .. B_n] (0 where a layer had none),
// then one Split of its last axis into the original results. One GEMM n
// times as wide instead of n narrow ones.
//
// Only projections whose results each reach a product of two activations
// (attention's Q Kᵀ or P V) through moves and scalar factors take part: the
// attention fusion (attention_pattern.h) then reads the Split's outputs in
// place, as offsets into the one result. A Split nothing absorbs would copy
// the result once more, which could cost what the wider GEMM saves.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

struct Projection {
  onnx::NodeProto* node = nullptr;
  std::vector<float> weight;  // [k, n], row-major
  std::vector<float> bias;    // [n]
  int64_t k = 0, n = 0;
};

// `node` as a dense layer by a constant weight, or nullopt.
std::optional<Projection> AsProjection(const GraphEditor& editor,
                                       onnx::NodeProto& node) {
  const bool matmul = IsDefaultDomain(node) && node.op_type() == "MatMul" &&
                      node.input_size() == 2;
  const bool fused = node.domain() == OpRegistry::kInternalDomain &&
                     node.op_type() == "FusedMatMul" &&
                     node.attribute_size() == 0 && node.input_size() <= 3;
  if ((!matmul && !fused) || node.output_size() != 1) return std::nullopt;
  Projection p;
  p.node = &node;
  Shape dims;
  std::optional<std::vector<float>> w =
      editor.FloatValues(node.input(1), &dims);
  if (!w || dims.size() != 2) return std::nullopt;
  p.weight = *std::move(w);
  p.k = dims[0];
  p.n = dims[1];
  if (node.input_size() == 3 && !node.input(2).empty()) {
    Shape bias_dims;
    std::optional<std::vector<float>> b =
        editor.FloatValues(node.input(2), &bias_dims);
    if (!b || bias_dims != Shape{p.n}) return std::nullopt;
    p.bias = *std::move(b);
  } else {
    p.bias.assign(p.n, 0.0f);
  }
  return p;
}

// The one node that reads `value` for more than its shape (Shape nodes
// aside: a Split's output has the shape of what it replaces), or null.
const onnx::NodeProto* SoleDataConsumer(GraphEditor& editor,
                                        const std::string& value) {
  if (editor.IsGraphOutput(value)) return nullptr;
  const onnx::NodeProto* found = nullptr;
  for (const onnx::NodeProto& node : editor.graph().node()) {
    if (IsDefaultDomain(node) && node.op_type() == "Shape") continue;
    for (const std::string& input : node.input()) {
      if (input != value) continue;
      if (found != nullptr) return nullptr;
      found = &node;
    }
  }
  return found;
}

// True when `value` reaches a MatMul of two non-constant operands through
// single-use moves and scalar Mul/Div: an operand of attention's products.
bool FeedsActivationProduct(GraphEditor& editor, std::string value) {
  for (int hop = 0; hop < 8; ++hop) {
    const onnx::NodeProto* next = SoleDataConsumer(editor, value);
    if (next == nullptr) return false;
    if (IsDefaultDomain(*next) && next->op_type() == "MatMul") {
      return next->input_size() == 2 &&
             editor.Initializer(next->input(0)) == nullptr &&
             editor.Initializer(next->input(1)) == nullptr;
    }
    const bool scalar_factor =
        IsDefaultDomain(*next) && next->input_size() == 2 &&
        next->input(0) == value &&
        (next->op_type() == "Mul" || next->op_type() == "Div") &&
        editor.FloatScalar(next->input(1)).has_value();
    const bool scalar_first =
        IsDefaultDomain(*next) && next->op_type() == "Mul" &&
        next->input_size() == 2 && next->input(1) == value &&
        editor.FloatScalar(next->input(0)).has_value();
    if (!(IsMove(*next) && next->input(0) == value) && !scalar_factor &&
        !scalar_first)
      return false;
    value = next->output(0);
  }
  return false;
}

// The packed weight and bias of one set of projections, by the names of
// their weights and biases: layers that share weights (ALBERT) share the
// packed ones too.
using PackedWeights =
    absl::flat_hash_map<std::string, std::pair<std::string, std::string>>;

// Replaces `group` (same input, same k) by one FusedMatMul and a Split.
void Merge(GraphEditor& editor, int64_t opset,
           const std::vector<Projection>& group, PackedWeights& packed) {
  const int64_t k = group.front().k;
  int64_t width = 0;
  for (const Projection& p : group) width += p.n;
  std::vector<float> weight(k * width), bias;
  int64_t column = 0;
  std::vector<int64_t> sizes;
  for (const Projection& p : group) {
    for (int64_t r = 0; r < k; ++r)
      std::copy(p.weight.begin() + r * p.n, p.weight.begin() + (r + 1) * p.n,
                weight.begin() + r * width + column);
    bias.insert(bias.end(), p.bias.begin(), p.bias.end());
    sizes.push_back(p.n);
    column += p.n;
  }
  const onnx::NodeProto& first = *group.front().node;
  const std::string base = first.name().empty() ? "projection" : first.name();
  std::string key;
  for (const Projection& p : group) {
    key += p.node->input(1) + "\n";
    key += (p.node->input_size() == 3 ? p.node->input(2) : "") + "\n";
  }
  auto [at, added] = packed.try_emplace(key);
  if (added) {
    at->second.first =
        editor.AddFloatInitializer(base + "_packed_w", {k, width}, weight);
    at->second.second =
        editor.AddFloatInitializer(base + "_packed_b", {width}, bias);
  }
  onnx::NodeProto* gemm = editor.graph().add_node();
  gemm->set_op_type("FusedMatMul");
  gemm->set_domain(OpRegistry::kInternalDomain);
  gemm->set_name(editor.UniqueName(base + "_packed"));
  gemm->add_input(first.input(0));
  gemm->add_input(at->second.first);
  gemm->add_input(at->second.second);
  gemm->add_output(editor.UniqueName(base + "_packed_out"));
  onnx::NodeProto* split = editor.graph().add_node();
  split->set_op_type("Split");
  split->set_name(editor.UniqueName(base + "_unpack"));
  split->add_input(gemm->output(0));
  onnx::AttributeProto* axis = split->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  if (opset >= 13) {
    split->add_input(editor.AddInt64Initializer(base + "_unpack_sizes", sizes));
  } else {
    onnx::AttributeProto* s = split->add_attribute();
    s->set_name("split");
    s->set_type(onnx::AttributeProto::INTS);
    for (int64_t n : sizes) s->add_ints(n);
  }
  for (const Projection& p : group) {
    split->add_output(p.node->output(0));
    editor.Remove(p.node);
  }
}

}  // namespace

void FuseSharedInputProjections(int64_t opset, GraphEditor& editor) {
  if (opset < 11) return;  // Split's negative axis
  // By input, in graph order: the projections that qualify.
  absl::flat_hash_map<std::string, std::vector<Projection>> by_input;
  std::vector<std::string> inputs;
  for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
    std::optional<Projection> p = AsProjection(editor, node);
    if (!p || node.input(0).empty() ||
        !FeedsActivationProduct(editor, node.output(0)))
      continue;
    std::vector<Projection>& group = by_input[node.input(0)];
    if (group.empty()) inputs.push_back(node.input(0));
    if (!group.empty() && group.front().k != p->k) continue;
    group.push_back(*std::move(p));
  }
  PackedWeights packed;
  for (const std::string& input : inputs) {
    const std::vector<Projection>& group = by_input[input];
    if (group.size() >= 2) Merge(editor, opset, group, packed);
  }
  editor.Commit();
}

}  // namespace coalesce
