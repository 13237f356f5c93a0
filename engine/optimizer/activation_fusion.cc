// MatMul + bias fusion and activation fusion (graph_optimizer.h, passes 3
// and 4). Both move a following node into its producer when the producer's
// result has no other use.
#include <limits>
#include <optional>
#include <string>

#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

// The fused form of `node`'s op type, when it has one and carries no
// activation yet ("Conv" -> "FusedConv"); empty otherwise.
std::string FusedName(const onnx::NodeProto& node) {
  if (IsDefaultDomain(node)) {
    if (node.op_type() == "Conv" || node.op_type() == "Gemm" ||
        node.op_type() == "MatMul")
      return "Fused" + node.op_type();
    return "";
  }
  if (node.domain() != OpRegistry::kInternalDomain ||
      FindAttr(node, "activation") != nullptr)
    return "";
  if (node.op_type() == "FusedConv" || node.op_type() == "FusedGemm" ||
      node.op_type() == "FusedMatMul")
    return node.op_type();
  return "";
}

void MakeFused(onnx::NodeProto& node) {
  node.set_op_type(FusedName(node));
  node.set_domain(OpRegistry::kInternalDomain);
}

struct Activation {
  std::string name;
  float alpha = 0.0f, beta = 0.0f;
};

// Clip's bounds: attributes before opset 11, optional constant inputs after.
std::optional<Activation> ClipBounds(const GraphEditor& editor,
                                     const onnx::NodeProto& clip,
                                     int64_t opset) {
  Activation a{"Clip", -std::numeric_limits<float>::infinity(),
               std::numeric_limits<float>::infinity()};
  if (opset < 11) {
    if (const auto* min = FindAttr(clip, "min")) a.alpha = min->f();
    if (const auto* max = FindAttr(clip, "max")) a.beta = max->f();
    return a;
  }
  for (int i = 1; i < clip.input_size() && i < 3; ++i) {
    if (clip.input(i).empty()) continue;
    std::optional<float> v = editor.FloatScalar(clip.input(i));
    if (!v) return std::nullopt;
    (i == 1 ? a.alpha : a.beta) = *v;
  }
  return a;
}

std::optional<Activation> ActivationOf(const GraphEditor& editor,
                                       const onnx::NodeProto& node,
                                       int64_t opset) {
  // GELU: ONNX's (opset 20) or the erf or tanh pattern's (pattern_fusion.cc).
  if (node.op_type() == "Gelu" &&
      (IsDefaultDomain(node) || node.domain() == OpRegistry::kInternalDomain)) {
    const auto* approximate = FindAttr(node, "approximate");
    const bool tanh = approximate != nullptr && approximate->s() == "tanh";
    return Activation{tanh ? "GeluTanh" : "Gelu"};
  }
  if (!IsDefaultDomain(node)) return std::nullopt;
  const std::string& op = node.op_type();
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish")
    return Activation{op};
  if (op == "HardSigmoid") {
    const auto* alpha = FindAttr(node, "alpha");
    const auto* beta = FindAttr(node, "beta");
    return Activation{op, alpha ? alpha->f() : 0.2f, beta ? beta->f() : 0.5f};
  }
  if (op == "LeakyRelu") {
    const auto* alpha = FindAttr(node, "alpha");
    return Activation{op, alpha ? alpha->f() : 0.01f};
  }
  if (op == "Clip") return ClipBounds(editor, node, opset);
  return std::nullopt;
}

}  // namespace

void FuseMatMulBias(GraphEditor& editor) {
  for (onnx::NodeProto& add : *editor.graph().mutable_node()) {
    if (add.op_type() != "Add" || !IsDefaultDomain(add) ||
        add.input_size() != 2)
      continue;
    for (int side : {0, 1}) {
      onnx::NodeProto* mm = editor.Producer(add.input(side));
      if (mm == nullptr || mm->op_type() != "MatMul" || !IsDefaultDomain(*mm) ||
          mm->input_size() != 2 || !editor.HasSingleNodeUse(add.input(side)))
        continue;
      Shape b_dims, bias_dims;
      const std::string& bias = add.input(1 - side);
      if (!editor.FloatValues(mm->input(1), &b_dims) ||
          !editor.FloatValues(bias, &bias_dims) || b_dims.size() != 2 ||
          bias_dims != Shape{b_dims[1]})
        continue;
      MakeFused(*mm);
      mm->add_input(bias);
      mm->set_output(0, add.output(0));
      editor.Remove(&add);
      break;
    }
  }
  editor.Commit();
}

// The sigmoid's input scale when `input` is x itself (1), or Mul(x, c) /
// Mul(c, x) for a float scalar constant c read by the Sigmoid alone (c);
// *scaling is that Mul, else null. Nullopt otherwise.
std::optional<float> SigmoidScale(GraphEditor& editor, const std::string& input,
                                  const std::string& x,
                                  onnx::NodeProto** scaling) {
  *scaling = nullptr;
  if (input == x) return 1.0f;
  onnx::NodeProto* mul = editor.Producer(input);
  if (mul == nullptr || !IsDefaultDomain(*mul) || mul->op_type() != "Mul" ||
      mul->input_size() != 2 || !editor.HasSingleNodeUse(input))
    return std::nullopt;
  for (int side : {0, 1}) {
    if (mul->input(side) != x) continue;
    std::optional<float> c = editor.FloatScalar(mul->input(1 - side));
    if (!c) return std::nullopt;
    *scaling = mul;
    return *c;
  }
  return std::nullopt;
}

// SiLU as exporters write it, Mul(x, Sigmoid(x)) (either operand order),
// and its scaled form Mul(x, Sigmoid(Mul(x, c))) (CLIP's quick GELU, c =
// 1.702), where x is a fusable producer's result read by exactly those
// nodes: the producer gets activation "Silu" with the scale as its alpha
// and writes the outer Mul's output; the Sigmoid and the Muls are removed.
// True when it fused.
bool FuseSilu(onnx::NodeProto& mul, GraphEditor& editor) {
  if (!IsDefaultDomain(mul) || mul.op_type() != "Mul" ||
      mul.input_size() != 2 || mul.output_size() != 1)
    return false;
  for (int side : {0, 1}) {
    const std::string& x = mul.input(side);
    onnx::NodeProto* sigmoid = editor.Producer(mul.input(1 - side));
    onnx::NodeProto* producer = editor.Producer(x);
    if (sigmoid == nullptr || !IsDefaultDomain(*sigmoid) ||
        sigmoid->op_type() != "Sigmoid" || sigmoid->input_size() != 1 ||
        producer == nullptr || FusedName(*producer).empty() ||
        producer->output_size() != 1 ||
        !editor.HasSingleNodeUse(sigmoid->output(0)))
      continue;
    onnx::NodeProto* scaling = nullptr;
    std::optional<float> scale =
        SigmoidScale(editor, sigmoid->input(0), x, &scaling);
    if (!scale || editor.UseCount(x) != 2) continue;
    MakeFused(*producer);
    SetStringAttr(*producer, "activation", "Silu");
    SetFloatAttr(*producer, "activation_alpha", *scale);
    SetFloatAttr(*producer, "activation_beta", 0.0f);
    producer->set_output(0, mul.output(0));
    editor.Remove(sigmoid);
    if (scaling != nullptr) editor.Remove(scaling);
    editor.Remove(&mul);
    return true;
  }
  return false;
}

// Whether `node` only relabels its data input's elements (same values, same
// order): an elementwise function commutes with it.
bool MovesNoElement(const onnx::NodeProto& node) {
  if (!IsDefaultDomain(node) || node.output_size() != 1 ||
      node.input_size() < 1)
    return false;
  const std::string& op = node.op_type();
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
         op == "Unsqueeze";
}

// The node whose result reaches `value` through shape-only nodes
// (MovesNoElement), each result read by that chain's next node alone: the
// producer, or null. *last is the chain's last node (the producer when
// there is none between).
onnx::NodeProto* ProducerThroughReshapes(GraphEditor& editor,
                                         const std::string& value,
                                         onnx::NodeProto** last) {
  constexpr int kMaxHops = 3;
  std::string at = value;
  *last = nullptr;
  for (int hop = 0; hop <= kMaxHops; ++hop) {
    onnx::NodeProto* node = editor.Producer(at);
    if (node == nullptr || !editor.HasSingleNodeUse(at)) return nullptr;
    if (*last == nullptr) *last = node;
    if (!MovesNoElement(*node)) return node;
    at = node->input(0);
  }
  return nullptr;
}

void FuseActivations(int64_t opset, GraphEditor& editor) {
  for (onnx::NodeProto& mul : *editor.graph().mutable_node())
    FuseSilu(mul, editor);
  editor.Commit();
  for (onnx::NodeProto& act_node : *editor.graph().mutable_node()) {
    if (act_node.input_size() < 1) continue;
    std::optional<Activation> act = ActivationOf(editor, act_node, opset);
    if (!act) continue;
    // GPT-2's Conv1D: Gemm -> Reshape -> GELU. The activation is
    // elementwise, so it moves into the Gemm across the reshape; the last
    // node of the chain then writes the activation's output.
    onnx::NodeProto* last = nullptr;
    onnx::NodeProto* producer =
        ProducerThroughReshapes(editor, act_node.input(0), &last);
    if (producer == nullptr || FusedName(*producer).empty() ||
        producer->output_size() != 1)
      continue;
    MakeFused(*producer);
    SetStringAttr(*producer, "activation", act->name);
    SetFloatAttr(*producer, "activation_alpha", act->alpha);
    SetFloatAttr(*producer, "activation_beta", act->beta);
    last->set_output(0, act_node.output(0));
    editor.Remove(&act_node);
  }
  editor.Commit();
}

}  // namespace coalesce
