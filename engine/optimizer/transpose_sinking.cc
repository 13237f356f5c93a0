// Transpose sinking into attention (graph_optimizer.h, pass 8; device
// programs only): a Transpose that keeps the last axis in place and whose
// one reader is a dense layer (MatMul, or FusedMatMul without a residual,
// by a 2-D constant weight) moves after that layer: T(x) W + b becomes
// T(x W + b), the same rows in the same order. Only when everything the
// layer makes reaches attention's products through moves, Gathers of one
// entry and scalar factors: the attention fusion (attention_pattern.h)
// then reads q, k and v through the moved Transpose in place, so the copy
// of the layer's input is gone. nn.MultiheadAttention's exports
// (torchvision's ViT) transpose [B, S, E] to [S, B, E] before the packed
// in-projection. The CPU runs attention node by node and would copy the
// wider result instead, so the CPU engine does not run this pass.
#include <string>
#include <vector>

#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

// The nodes that read `value` for more than its shape.
std::vector<const onnx::NodeProto*> DataConsumers(GraphEditor& editor,
                                                  const std::string& value) {
  std::vector<const onnx::NodeProto*> found;
  for (const onnx::NodeProto& node : editor.graph().node()) {
    if (IsDefaultDomain(node) && node.op_type() == "Shape") continue;
    for (const std::string& input : node.input())
      if (input == value) {
        found.push_back(&node);
        break;
      }
  }
  return found;
}

// A Gather of one entry: its data is `value`, its index a constant scalar.
bool GathersOneEntry(GraphEditor& editor, const onnx::NodeProto& node,
                     const std::string& value) {
  if (!IsDefaultDomain(node) || node.op_type() != "Gather" ||
      node.input_size() != 2 || node.input(0) != value)
    return false;
  const onnx::TensorProto* index = editor.Initializer(node.input(1));
  return index != nullptr && index->dims_size() == 0 &&
         editor.Int64Values(node.input(1)).has_value();
}

// True when `value` depends on shapes and constants only (exporters compute
// attention's scale from the head dimension's size), so that a plan knows
// it before it runs.
bool ShapeDerived(GraphEditor& editor, const std::string& value, int depth) {
  if (editor.Initializer(value) != nullptr) return true;
  const onnx::NodeProto* node = editor.Producer(value);
  if (node == nullptr || depth > 16) return false;
  if (IsDefaultDomain(*node) && node->op_type() == "Shape") return true;
  for (const std::string& input : node->input())
    if (!input.empty() && !ShapeDerived(editor, input, depth + 1)) return false;
  return true;
}

// True when every reader of `value` leads, through moves, one-entry
// Gathers and Mul/Div by what shapes determine, to a MatMul of two
// non-constant operands
// (attention's Q Kᵀ or P V), and nothing else reads on the way.
bool OnlyFeedsAttention(GraphEditor& editor, const std::string& value,
                        int depth) {
  if (depth > 12 || editor.IsGraphOutput(value)) return false;
  const std::vector<const onnx::NodeProto*> readers =
      DataConsumers(editor, value);
  if (readers.empty()) return false;
  for (const onnx::NodeProto* next : readers) {
    if (IsDefaultDomain(*next) && next->op_type() == "MatMul") {
      if (next->input_size() != 2 ||
          editor.Initializer(next->input(0)) != nullptr ||
          editor.Initializer(next->input(1)) != nullptr)
        return false;
      continue;
    }
    const bool factor =
        IsDefaultDomain(*next) && next->input_size() == 2 &&
        (next->op_type() == "Mul" || next->op_type() == "Div") &&
        next->input(0) == value && ShapeDerived(editor, next->input(1), 0);
    const bool passes = (IsMove(*next) && next->input(0) == value) ||
                        GathersOneEntry(editor, *next, value) || factor;
    if (!passes || next->output_size() != 1 ||
        !OnlyFeedsAttention(editor, next->output(0), depth + 1))
      return false;
  }
  return true;
}

// Perm of a Transpose that keeps its last axis last, else empty.
std::vector<int64_t> RowPerm(const onnx::NodeProto& node) {
  if (!IsDefaultDomain(node) || node.op_type() != "Transpose" ||
      node.input_size() != 1 || node.output_size() != 1)
    return {};
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() != "perm") continue;
    const int64_t rank = a.ints_size();
    if (rank >= 2 && a.ints(rank - 1) == rank - 1)
      return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

// `node` as a dense layer reading `input` as its rows.
bool IsDenseOf(GraphEditor& editor, const onnx::NodeProto& node,
               const std::string& input) {
  const bool matmul = IsDefaultDomain(node) && node.op_type() == "MatMul" &&
                      node.input_size() == 2;
  const bool fused = node.domain() == OpRegistry::kInternalDomain &&
                     node.op_type() == "FusedMatMul" && node.input_size() <= 3;
  if ((!matmul && !fused) || node.output_size() != 1 || node.input(0) != input)
    return false;
  const onnx::TensorProto* weight = editor.Initializer(node.input(1));
  return weight != nullptr && weight->dims_size() == 2;
}

// Shape nodes reading a Transpose's output read its input instead, the
// dims then permuted by a Gather: Shape(T(x)) = Gather(Shape(x), perm), so
// the Transpose can go. False (nothing changed) when a Shape takes a range
// (start/end).
bool ReadShapesBeforeTranspose(GraphEditor& editor,
                               const onnx::NodeProto& transpose,
                               const std::vector<int64_t>& perm) {
  std::vector<onnx::NodeProto*> shapes;
  for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
    if (!IsDefaultDomain(node) || node.op_type() != "Shape" ||
        node.input_size() != 1 || node.input(0) != transpose.output(0))
      continue;
    if (node.attribute_size() != 0) return false;
    shapes.push_back(&node);
  }
  if (shapes.empty()) return true;
  const std::string dims = editor.UniqueName(transpose.input(0) + "_shape");
  onnx::NodeProto* shape = editor.graph().add_node();
  shape->set_op_type("Shape");
  shape->set_name(dims);
  shape->add_input(transpose.input(0));
  shape->add_output(dims);
  const std::string order =
      editor.AddInt64Initializer(transpose.name() + "_perm", perm);
  for (onnx::NodeProto* old : shapes) {
    onnx::NodeProto* gather = editor.graph().add_node();
    gather->set_op_type("Gather");
    gather->set_name(editor.UniqueName(old->name() + "_permuted"));
    gather->add_input(dims);
    gather->add_input(order);
    gather->add_output(old->output(0));
    editor.Remove(old);
  }
  return true;
}

}  // namespace

void SinkTransposesIntoAttention(GraphEditor& editor) {
  std::vector<std::pair<onnx::NodeProto*, onnx::NodeProto*>> moves;
  for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
    if (RowPerm(node).empty() || editor.IsGraphOutput(node.output(0))) continue;
    // Shape nodes may read the transposed value too: exporters take the
    // sequence length and the batch from it (ReadShapesBeforeTranspose).
    const std::vector<const onnx::NodeProto*> readers =
        DataConsumers(editor, node.output(0));
    if (readers.size() != 1) continue;
    onnx::NodeProto* dense = const_cast<onnx::NodeProto*>(readers.front());
    if (!IsDenseOf(editor, *dense, node.output(0)) ||
        !OnlyFeedsAttention(editor, dense->output(0), 0))
      continue;
    moves.emplace_back(&node, dense);
  }
  for (auto [transpose, dense] : moves) {
    if (!ReadShapesBeforeTranspose(editor, *transpose, RowPerm(*transpose)))
      continue;
    const std::string result = dense->output(0);
    const std::string rows = editor.UniqueName(result + "_rows");
    dense->set_input(0, transpose->input(0));
    dense->set_output(0, rows);
    onnx::NodeProto* moved = editor.graph().add_node();
    *moved = *transpose;
    moved->set_input(0, rows);
    moved->set_output(0, result);
    editor.Remove(transpose);
  }
  editor.Commit();
}

}  // namespace coalesce
