// LayerNorm and GELU pattern fusion (graph_optimizer.h, the GELU and
// LayerNorm fusion passes): the decomposed forms exporters emit become one
// node each. Every intermediate of a matched chain must have no other use,
// so nothing else loses a value.
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

// The node producing `value` if it is default-domain `op_type` and its
// result has no use beyond the chain being matched.
onnx::NodeProto* Chain(const GraphEditor& editor, const std::string& value,
                       const char* op_type, int max_uses = 1) {
  onnx::NodeProto* node = editor.Producer(value);
  const std::string op(op_type);
  const int arity = op == "Sqrt" || op == "ReduceMean" ? 1 : 2;
  if (node == nullptr || node->op_type() != op_type ||
      !IsDefaultDomain(*node) || node->input_size() < arity ||
      editor.IsGraphOutput(value) || editor.UseCount(value) > max_uses)
    return nullptr;
  return node;
}

bool NearlyEqual(std::optional<float> v, double want) {
  return v && std::abs(*v - want) <= 1e-4 * std::abs(want);
}

// True when a ReduceMean reduces only the last axis and keeps dims.
bool ReducesLastAxis(const GraphEditor& editor, const onnx::NodeProto& node) {
  const onnx::AttributeProto* keep = FindAttr(node, "keepdims");
  if (keep && keep->i() != 1) return false;
  std::vector<int64_t> axes;
  if (const onnx::AttributeProto* a = FindAttr(node, "axes")) {
    axes.assign(a->ints().begin(), a->ints().end());
  } else if (node.input_size() > 1) {  // opset 18: axes input
    std::optional<std::vector<int64_t>> values =
        editor.Int64Values(node.input(1));
    if (!values) return false;
    axes = *std::move(values);
  }
  return axes == std::vector<int64_t>{-1};
}

// Matches y = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma
// [+ beta] ending at the Mul by gamma (or its Add); replaces it.
bool TryLayerNorm(GraphEditor& editor, onnx::NodeProto& div) {
  if (div.op_type() != "Div" || !IsDefaultDomain(div) || div.input_size() != 2)
    return false;
  onnx::NodeProto* sqrt = Chain(editor, div.input(1), "Sqrt");
  onnx::NodeProto* add_eps =
      sqrt ? Chain(editor, sqrt->input(0), "Add") : nullptr;
  if (add_eps == nullptr) return false;
  const std::optional<float> eps = editor.FloatScalar(add_eps->input(1));
  onnx::NodeProto* var =
      eps ? Chain(editor, add_eps->input(0), "ReduceMean") : nullptr;
  if (var == nullptr || !ReducesLastAxis(editor, *var)) return false;
  onnx::NodeProto* square = editor.Producer(var->input(0));
  if (square == nullptr || square->input_size() != 2 ||
      !editor.HasSingleNodeUse(var->input(0)))
    return false;
  const bool is_pow = square->op_type() == "Pow" &&
                      NearlyEqual(editor.FloatScalar(square->input(1)), 2.0);
  const bool is_mul =
      square->op_type() == "Mul" && square->input(0) == square->input(1);
  if (!is_pow && !is_mul) return false;
  const std::string& diff = div.input(0);
  if (square->input(0) != diff) return false;
  onnx::NodeProto* sub = Chain(editor, diff, "Sub", is_mul ? 3 : 2);
  onnx::NodeProto* mean =
      sub ? Chain(editor, sub->input(1), "ReduceMean") : nullptr;
  if (mean == nullptr || mean->input(0) != sub->input(0) ||
      !ReducesLastAxis(editor, *mean))
    return false;
  // The affine tail: Mul by a 1-D gamma, optionally Add of a 1-D beta.
  onnx::NodeProto* mul = editor.SoleConsumer(div.output(0));
  if (mul == nullptr || mul->op_type() != "Mul" || mul->input_size() != 2 ||
      mul->input(0) != div.output(0))
    return false;
  Shape gamma_dims;
  if (!editor.FloatValues(mul->input(1), &gamma_dims) || gamma_dims.size() != 1)
    return false;
  onnx::NodeProto* add_beta = editor.SoleConsumer(mul->output(0));
  Shape beta_dims;
  if (add_beta &&
      (add_beta->op_type() != "Add" || add_beta->input_size() != 2 ||
       add_beta->input(0) != mul->output(0) ||
       !editor.FloatValues(add_beta->input(1), &beta_dims) ||
       beta_dims != gamma_dims))
    add_beta = nullptr;

  onnx::NodeProto* ln = editor.graph().add_node();
  ln->set_op_type("LayerNormalization");
  ln->set_name(editor.UniqueName(div.name() + "_layernorm"));
  ln->add_input(sub->input(0));
  ln->add_input(mul->input(1));
  if (add_beta) ln->add_input(add_beta->input(1));
  ln->add_output(add_beta ? add_beta->output(0) : mul->output(0));
  onnx::AttributeProto* axis = ln->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  SetFloatAttr(*ln, "epsilon", *eps);
  for (onnx::NodeProto* n : {mean, sub, square, var, add_eps, sqrt, &div, mul})
    editor.Remove(n);
  if (add_beta) editor.Remove(add_beta);
  return true;
}

// The input of Mul(x, c) or Mul(c, x) with scalar c close to `want`.
std::optional<std::string> MulByScalar(const GraphEditor& editor,
                                       const onnx::NodeProto& mul,
                                       double want) {
  if (mul.op_type() != "Mul" || mul.input_size() != 2) return std::nullopt;
  for (int side : {0, 1})
    if (NearlyEqual(editor.FloatScalar(mul.input(1 - side)), want))
      return mul.input(side);
  return std::nullopt;
}

// The Mul node(s) after (1 + erf) or (1 + tanh): returns the final node and
// fills `first_mul` (the other Mul: x * (1 + ...) in form A, the Mul by 0.5
// that came first in form B).
onnx::NodeProto* GeluTail(GraphEditor& editor, const std::string& one_plus_erf,
                          const std::string& x, onnx::NodeProto** first_mul) {
  onnx::NodeProto* outer = editor.SoleConsumer(one_plus_erf);
  if (outer == nullptr || outer->op_type() != "Mul" || outer->input_size() != 2)
    return nullptr;
  const std::string& other =
      outer->input(0) == one_plus_erf ? outer->input(1) : outer->input(0);
  if (other == x) {  // form A: (x * (1 + erf)) * 0.5
    onnx::NodeProto* half = editor.SoleConsumer(outer->output(0));
    if (half == nullptr) return nullptr;
    std::optional<std::string> in = MulByScalar(editor, *half, 0.5);
    if (!in || *in != outer->output(0)) return nullptr;
    *first_mul = outer;
    return half;
  }
  onnx::NodeProto* half = editor.Producer(other);  // form B: (x * 0.5) * (...)
  if (half == nullptr || !editor.HasSingleNodeUse(other)) return nullptr;
  std::optional<std::string> in = MulByScalar(editor, *half, 0.5);
  if (!in || *in != x) return nullptr;
  *first_mul = half;
  return outer;
}

// The end both GELU forms share: f(...) (the Erf or Tanh node `f`, whose
// result must have no other use), then Add(f, 1), then GeluTail's Muls by x
// and 0.5. On a match, one internal Gelu(x) (with `approximate` unless
// empty) writes the last Mul's output, and `matched`, the Add and the Muls
// are removed. False, with nothing changed, otherwise.
bool FinishGelu(GraphEditor& editor, const onnx::NodeProto& f,
                const std::string& x, std::vector<onnx::NodeProto*> matched,
                const char* approximate) {
  if (!editor.HasSingleNodeUse(f.output(0))) return false;
  onnx::NodeProto* add = editor.SoleConsumer(f.output(0));
  if (add == nullptr || add->op_type() != "Add" || !IsDefaultDomain(*add) ||
      add->input_size() != 2 || !editor.HasSingleNodeUse(add->output(0)))
    return false;
  const std::string& one =
      add->input(0) == f.output(0) ? add->input(1) : add->input(0);
  if (!NearlyEqual(editor.FloatScalar(one), 1.0)) return false;
  onnx::NodeProto* first_mul = nullptr;
  onnx::NodeProto* last = GeluTail(editor, add->output(0), x, &first_mul);
  if (last == nullptr) return false;

  onnx::NodeProto* gelu = editor.graph().add_node();
  gelu->set_op_type("Gelu");
  gelu->set_domain(OpRegistry::kInternalDomain);
  gelu->set_name(editor.UniqueName(f.name() + "_gelu"));
  gelu->add_input(x);
  gelu->add_output(last->output(0));
  if (*approximate != '\0') SetStringAttr(*gelu, "approximate", approximate);
  matched.insert(matched.end(), {add, first_mul, last});
  for (onnx::NodeProto* n : matched) editor.Remove(n);
  return true;
}

// Matches x * 0.5 * (1 + Erf(x / sqrt(2))) (or x * (1/sqrt(2)) inside).
bool TryGelu(GraphEditor& editor, onnx::NodeProto& erf) {
  if (erf.op_type() != "Erf" || !IsDefaultDomain(erf) || erf.input_size() != 1)
    return false;
  onnx::NodeProto* scale = editor.Producer(erf.input(0));
  if (scale == nullptr || scale->input_size() != 2 ||
      !editor.HasSingleNodeUse(erf.input(0)))
    return false;
  std::optional<std::string> x;
  if (scale->op_type() == "Div" &&
      NearlyEqual(editor.FloatScalar(scale->input(1)), std::sqrt(2.0)))
    x = scale->input(0);
  if (!x) x = MulByScalar(editor, *scale, 1.0 / std::sqrt(2.0));
  if (!x) return false;
  return FinishGelu(editor, erf, *x, {scale, &erf}, "");
}

// x^3 at the producer of `value`, as Pow(x, 3), Mul(x, Mul(x, x)) or
// Mul(Mul(x, x), x), each result used only by the next: returns x and
// appends the nodes to `nodes`.
std::optional<std::string> CubeOf(const GraphEditor& editor,
                                  const std::string& value,
                                  std::vector<onnx::NodeProto*>* nodes) {
  if (onnx::NodeProto* pow = Chain(editor, value, "Pow")) {
    if (!NearlyEqual(editor.FloatScalar(pow->input(1)), 3.0))
      return std::nullopt;
    nodes->push_back(pow);
    return pow->input(0);
  }
  onnx::NodeProto* mul = Chain(editor, value, "Mul");
  if (mul == nullptr) return std::nullopt;
  for (int side : {0, 1}) {
    const std::string& x = mul->input(side);
    onnx::NodeProto* square = Chain(editor, mul->input(1 - side), "Mul");
    if (square != nullptr && square->input(0) == x && square->input(1) == x) {
      nodes->push_back(mul);
      nodes->push_back(square);
      return x;
    }
  }
  return std::nullopt;
}

// Matches the tanh-form GELU (GPT-2's gelu_new), anchored on the Tanh:
//   x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// with x^3 as CubeOf takes it, constants on either side of each Mul and
// Add, and the 0.5 first or last as GeluTail takes it. Becomes a Gelu with
// approximate="tanh".
bool TryGeluTanh(GraphEditor& editor, onnx::NodeProto& tanh) {
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  if (tanh.op_type() != "Tanh" || !IsDefaultDomain(tanh) ||
      tanh.input_size() != 1)
    return false;
  onnx::NodeProto* scale = Chain(editor, tanh.input(0), "Mul");
  std::optional<std::string> inner;
  if (scale != nullptr) inner = MulByScalar(editor, *scale, kSqrt2OverPi);
  onnx::NodeProto* sum = inner ? Chain(editor, *inner, "Add") : nullptr;
  if (sum == nullptr) return false;
  // sum = x + 0.044715 * x^3, either operand first.
  std::vector<onnx::NodeProto*> matched = {scale, sum};
  std::optional<std::string> x;
  for (int side : {0, 1}) {
    onnx::NodeProto* cubic = Chain(editor, sum->input(1 - side), "Mul");
    std::optional<std::string> cube;
    if (cubic != nullptr) cube = MulByScalar(editor, *cubic, 0.044715);
    std::vector<onnx::NodeProto*> cube_nodes;
    if (cube && CubeOf(editor, *cube, &cube_nodes) == sum->input(side)) {
      x = sum->input(side);
      matched.push_back(cubic);
      matched.insert(matched.end(), cube_nodes.begin(), cube_nodes.end());
      break;
    }
  }
  if (!x) return false;
  matched.push_back(&tanh);
  return FinishGelu(editor, tanh, *x, std::move(matched), "tanh");
}

// Runs `match` on every node, committing after each rewrite (a rewrite adds
// a node, which invalidates the iteration).
template <typename Match>
void RewriteAll(GraphEditor& editor, Match match) {
  for (bool changed = true; changed;) {
    changed = false;
    const int count = editor.graph().node_size();
    for (int i = 0; i < count && !changed; ++i)
      changed = match(editor, *editor.graph().mutable_node(i));
    editor.Commit();
  }
}

}  // namespace

void FuseLayerNorm(GraphEditor& editor) { RewriteAll(editor, TryLayerNorm); }

void FuseGelu(GraphEditor& editor) {
  RewriteAll(editor, [](GraphEditor& e, onnx::NodeProto& node) {
    return TryGelu(e, node) || TryGeluTanh(e, node);
  });
}

}  // namespace coalesce
