#include "engine/optimizer/graph_optimizer.h"

#include "absl/strings/str_cat.h"
#include "engine/optimizer/graph_editor.h"
#include "engine/optimizer/passes.h"

namespace coalesce {

absl::Status OptimizeGraph(const OptimizerOptions& options, int64_t opset,
                           onnx::GraphProto* graph,
                           const ExternalData* external) {
  // The passes match patterns on the file as written, before the graph is
  // validated; a node without outputs is the one shape they cannot skip.
  for (const onnx::NodeProto& node : graph->node()) {
    if (node.output_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name(),
                                                     "' (op '", node.op_type(),
                                                     "') has no outputs"));
    }
  }
  GraphEditor editor(graph, external);
  // Not an optimization and not optional: without it no compute operator
  // accepts a FLOAT16/BFLOAT16 model.
  if (absl::Status s = ComputeHalfInFloat(editor); !s.ok()) return s;
  if (options.constant_folding) {
    if (absl::Status s = FoldConstants(opset, editor); !s.ok()) return s;
  }
  if (options.conv_affine_folding) FoldConvChannelAffine(editor);
  if (options.patch_convolutions) LowerPatchConvolutions(editor);
  if (options.matmul_bias_fusion) FuseMatMulBias(editor);
  if (options.residual_fusion) FuseConvResidual(editor);
  // GELU first: activation fusion then takes it into its GEMM.
  if (options.gelu_fusion) FuseGelu(editor);
  if (options.activation_fusion) FuseActivations(opset, editor);
  if (options.projection_fusion) FuseSharedInputProjections(opset, editor);
  if (options.layer_norm_fusion) FuseLayerNorm(editor);
  if (options.channels_last) UseChannelsLast(editor);
  if (options.common_subexpressions) MergeCommonSubexpressions(editor);
  if (options.dead_node_removal) RemoveDeadNodes(editor);
  return absl::OkStatus();
}

}  // namespace coalesce
