#include "engine/optimizer/graph_optimizer.h"

#include "engine/optimizer/graph_editor.h"
#include "engine/optimizer/passes.h"

namespace coalesce {

absl::Status OptimizeGraph(const OptimizerOptions& options, int64_t opset,
                           onnx::GraphProto* graph) {
  GraphEditor editor(graph);
  // Not an optimization and not optional: without it no compute operator
  // accepts a FLOAT16/BFLOAT16 model.
  if (absl::Status s = ComputeHalfInFloat(editor); !s.ok()) return s;
  if (options.constant_folding) {
    if (absl::Status s = FoldConstants(opset, editor); !s.ok()) return s;
  }
  if (options.conv_affine_folding) FoldConvChannelAffine(editor);
  if (options.matmul_bias_fusion) FuseMatMulBias(editor);
  if (options.activation_fusion) FuseActivations(opset, editor);
  if (options.layer_norm_fusion) FuseLayerNorm(editor);
  if (options.gelu_fusion) FuseGelu(editor);
  if (options.dead_node_removal) RemoveDeadNodes(editor);
  return absl::OkStatus();
}

}  // namespace coalesce
