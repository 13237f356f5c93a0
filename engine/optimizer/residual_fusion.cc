// Residual fusion (graph_optimizer.h, pass 4): Add (or a two-input Sum) of a
// convolution's or a MatMul's result and another value z becomes FusedConv
// or FusedMatMul with z as its fourth input, y = act(conv(x, W) + B + z) or
// act(x W + B + z). The product must carry no activation yet (act(conv) +
// z is another function) and its result must feed only the Add. Runs before
// activation fusion, so the Relu after a ResNet block's sum then fuses into
// the same node. For a transformer's dense layer followed by its residual
// add, the GPU adds z in the GEMM (cuBLASLt's C, beta 1).
//
// z is not a constant: a per-channel constant is conv affine folding's (it
// folds into B), a bias row is MatMul bias fusion's, and any other constant
// gains nothing here. A MatMul's B must be a weight (a dense layer). The
// pass cannot see shapes, so z may broadcast; the kernels handle that
// (ops/conv.cc, ops/matmul.cc).
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

// "FusedConv" for a Conv, or a FusedConv without an activation or a
// residual yet; "FusedMatMul" likewise for MatMul; empty otherwise.
std::string ResidualFusedName(const onnx::NodeProto* node) {
  if (node == nullptr || node->output_size() != 1 || node->input_size() > 3)
    return "";
  for (const char* op : {"Conv", "MatMul"}) {
    const std::string fused = std::string("Fused") + op;
    if (node->op_type() == op && IsDefaultDomain(*node)) return fused;
    if (node->op_type() == fused &&
        node->domain() == OpRegistry::kInternalDomain &&
        FindAttr(*node, "activation") == nullptr)
      return fused;
  }
  return "";
}

}  // namespace

void FuseConvResidual(GraphEditor& editor) {
  for (onnx::NodeProto& add : *editor.graph().mutable_node()) {
    if (!IsResidualAdd(add)) continue;
    for (int side : {0, 1}) {
      onnx::NodeProto* product = editor.Producer(add.input(side));
      const std::string& z = add.input(1 - side);
      const std::string fused = ResidualFusedName(product);
      // (A product with fewer than two inputs is malformed: left for the
      // loader's checks to refuse, never read past its inputs here.)
      if (fused.empty() || product->input_size() < 2 ||
          !editor.HasSingleNodeUse(add.input(side)) || z.empty() ||
          editor.Initializer(z) != nullptr)
        continue;
      // A MatMul only as a dense layer (B a weight): the product of two
      // activations is attention's Q Kᵀ, whose Add is the mask, which the
      // attention fusion (attention_pattern.h) takes.
      if (fused == "FusedMatMul" &&
          editor.Initializer(product->input(1)) == nullptr)
        continue;
      product->set_op_type(fused);
      product->set_domain(OpRegistry::kInternalDomain);
      while (product->input_size() < 3) product->add_input("");  // no bias
      product->add_input(z);
      product->set_output(0, add.output(0));
      editor.Remove(&add);
      break;
    }
  }
  editor.Commit();
}

}  // namespace coalesce
