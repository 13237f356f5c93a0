// Graph optimization at load: rewrites an ONNX graph into an equivalent one
// that runs faster, before the engine builds kernels for it.
//
// First, always (OptimizerOptions::None() included, because without it no
// compute operator accepts the model): a model that uses FLOAT16 or BFLOAT16
// is rewritten to compute in FLOAT, with Casts at its half inputs and
// outputs so that its signature stays as declared (half_precision.cc;
// docs/engine.md, "Half precision"). A model without either type is left
// exactly as it is.
//
// Then the passes, in order (each can be switched off, which the tests use
// to compare optimized and unoptimized outputs):
//   1. constant folding: nodes whose inputs are all constants are run once
//      with the engine's own kernels and become initializers (this includes
//      the ConstantOfShape weights of the ONNX "light" models and shape
//      arithmetic on constants; shapes of inputs are folded per plan by
//      ExecutionPlan);
//   2. Conv + channel affine folding: a BatchNormalization, or a Mul / Add by
//      a per-channel constant, after a Conv is folded into its weights and
//      bias;
//   2b. patch convolutions, for device programs only
//      (ModelOptions::ForDevice): a 2-D Conv whose stride is its kernel
//      (2x2 or more), without padding, dilation or groups, over an input of
//      declared C (below 8), H and W (a vision transformer's patch
//      embedding over the image) becomes a Reshape
//      and Transpose into patches, a MatMul by its weights (and its bias
//      Add), and a Transpose back (patch_convolution.cc): one GEMM on the
//      GPU instead of a 3-channel convolution;
//   3. MatMul + bias: MatMul then Add of a constant [N] becomes FusedMatMul;
//   4. residual fusion: Add(Conv result, z) becomes FusedConv with z as a
//      fourth input, y = act(conv + B + z), when the Conv has no activation
//      yet and feeds only the Add (residual_fusion.cc); the CPU runs it as
//      oneDNN's sum post-op, in place of z where z dies there; likewise
//      Add(MatMul result, z) for a MatMul by a weight (a dense layer:
//      FusedMatMul, y = act(x W + B + z), which the GPU adds in the GEMM);
//   5. GELU fusion: x * 0.5 * (1 + Erf(x / sqrt(2))) becomes one Gelu,
//      and the tanh form (GPT-2's gelu_new), x * 0.5 * (1 + Tanh(sqrt(2/pi)
//      * (x + 0.044715 * x^3))), one Gelu with approximate="tanh";
//   6. activation fusion: Conv / Gemm / MatMul then Relu, LeakyRelu, Clip,
//      Sigmoid, Tanh, HardSwish, HardSigmoid, Gelu (ONNX's or pass 5's),
//      or SiLU written as Mul(x, Sigmoid(x)), becomes FusedConv / FusedGemm
//      / FusedMatMul with the activation applied as the result is stored
//      (BERT's FFN: one FusedMatMul with bias and GELU), also across up to
//      three Reshape / Flatten / Squeeze / Unsqueeze nodes between them
//      (GPT-2's Conv1D: Gemm, Reshape, GELU);
//   7. shared-input projection fusion: the dense layers that read one input
//      and each feed attention's products through moves (Q, K and V) become
//      one FusedMatMul by their weights side by side, then a Split, which
//      the attention fusion reads in place (projection_fusion.cc);
//   8. LayerNorm fusion: the ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/
//      Add chain exporters emit becomes one LayerNormalization;
//   9. channels last: 2-D convolutions become FusedConv with
//      channels_last=1 between Transposes to and from NHWC; the transposes
//      then move through layout-blind operators (elementwise, Concat) and
//      cancel in pairs, so convolutions pass NHWC values to each other
//      without reordering (channels_last.cc). For the CPU engine only:
//      device programs lower NCHW convolutions (ModelOptions::ForDevice);
//  10. common subexpressions: nodes of the same operator, attributes and
//      inputs (small constants compared by value) become one
//      (common_subexpressions.cc): a TorchScript export of a Hugging Face
//      encoder builds its [B, 1, S, S] mask once instead of once per layer;
//  11. dead node removal: nodes and initializers no graph output depends on.
// Fused operators live in OpRegistry::kInternalDomain. A pass only rewrites
// what it fully matched, so a graph it does not recognize is left as is.
#ifndef COALESCE_ENGINE_OPTIMIZER_GRAPH_OPTIMIZER_H_
#define COALESCE_ENGINE_OPTIMIZER_GRAPH_OPTIMIZER_H_

#include <cstdint>

#include "absl/status/status.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace coalesce {

class ExternalData;

struct OptimizerOptions {
  bool constant_folding = true;
  bool conv_affine_folding = true;
  bool matmul_bias_fusion = true;
  bool residual_fusion = true;
  bool activation_fusion = true;
  bool layer_norm_fusion = true;
  bool gelu_fusion = true;
  bool channels_last = true;
  bool dead_node_removal = true;
  bool projection_fusion = true;
  bool common_subexpressions = true;
  // Off by default: the CPU runs patch convolutions well as they are;
  // ModelOptions::ForDevice turns it on.
  bool patch_convolutions = false;

  static OptimizerOptions None() {
    return {false, false, false, false, false, false,
            false, false, false, false, false};
  }
};

// Rewrites `graph` (of a model importing default-domain `opset`) in place;
// graph inputs and outputs keep their names and declared types. Errors only
// for a graph the engine would reject anyway (a constant that cannot be
// read); on error `graph` may be partly rewritten.
// External initializers are read through `external` (null: a pass that
// needs one of their values leaves the graph as it is).
absl::Status OptimizeGraph(const OptimizerOptions& options, int64_t opset,
                           onnx::GraphProto* graph,
                           const ExternalData* external = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPTIMIZER_GRAPH_OPTIMIZER_H_
