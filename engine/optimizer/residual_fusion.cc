// Residual fusion (graph_optimizer.h, pass 4): Add (or a two-input Sum) of a
// convolution's result and another value z becomes FusedConv with z as its
// fourth input, y = act(conv(x, W) + B + z). The convolution must carry no
// activation yet (act(conv) + z is another function) and its result must
// feed only the Add. Runs before activation fusion, so the Relu after a
// ResNet block's sum then fuses into the same node.
//
// z is not a constant: a per-channel constant is conv affine folding's (it
// folds into B), and any other constant gains nothing here. The pass cannot
// see shapes, so z may broadcast; the kernels handle that (ops/conv.cc).
#include <string>

#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

bool IsResidualAdd(const onnx::NodeProto& node) {
  return IsDefaultDomain(node) && node.input_size() == 2 &&
         node.output_size() == 1 &&
         (node.op_type() == "Add" || node.op_type() == "Sum");
}

// A Conv, or a FusedConv without an activation or a residual yet.
bool IsFusableConv(const onnx::NodeProto* node) {
  if (node == nullptr || node->output_size() != 1 || node->input_size() > 3)
    return false;
  if (node->op_type() == "Conv" && IsDefaultDomain(*node)) return true;
  return node->op_type() == "FusedConv" &&
         node->domain() == OpRegistry::kInternalDomain &&
         FindAttr(*node, "activation") == nullptr;
}

}  // namespace

void FuseConvResidual(GraphEditor& editor) {
  for (onnx::NodeProto& add : *editor.graph().mutable_node()) {
    if (!IsResidualAdd(add)) continue;
    for (int side : {0, 1}) {
      onnx::NodeProto* conv = editor.Producer(add.input(side));
      const std::string& z = add.input(1 - side);
      if (!IsFusableConv(conv) || !editor.HasSingleNodeUse(add.input(side)) ||
          z.empty() || editor.Initializer(z) != nullptr)
        continue;
      conv->set_op_type("FusedConv");
      conv->set_domain(OpRegistry::kInternalDomain);
      while (conv->input_size() < 3) conv->add_input("");  // no bias
      conv->add_input(z);
      conv->set_output(0, add.output(0));
      editor.Remove(&add);
      break;
    }
  }
  editor.Commit();
}

}  // namespace coalesce
