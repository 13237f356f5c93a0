// Token packing (issue 27): a transformer's batch of sequences padded to one
// length runs its token-wise layers (the dense layers, their bias and
// residual adds, LayerNorms, GELU) on the batch's real tokens only, [T, E]
// rows instead of [B * S, E]; attention runs per sequence over the packed
// rows where its site allows (engine/packed_rows.h), else padded, its
// padded keys masked. docs/engine.md ("Token packing") says when it pays and
// what it changes for clients.
//
// RewriteForTokenPacking turns the optimized graph of a model into its
// packed form, using two probe plans of the padded model (batches 2 and 3,
// sequence 11 and 13, or the model's fixed sequence length) to see which
// values are token rows: float32 [batch, seq, E], or [batch * seq, E]
// (GPT-2's dense layers run on such reshapes), with E the same in both.
//   - The region: nodes that compute each token row from that row alone,
//     every output a token-row value: MatMul and FusedMatMul by a constant
//     [K, N] (FusedMatMul's bias a constant, its residual token rows or a
//     constant broadcast over rows), Gemm and FusedGemm likewise (A not
//     transposed, C a constant broadcast over rows), a Reshape between
//     token rows of one width (an Identity packed: both forms are [T, E]),
//     LayerNormalization and Softmax (opset 13+) over the last axis, and
//     the elementwise
//     operators Add, Sub, Mul, Div, Pow, Sqrt, Erf, Tanh, Sigmoid, Relu,
//     Neg, Gelu, Cast, Identity whose other inputs are constants broadcast
//     over rows (dims 1 but the last). Connected parts of it with no
//     product are left padded (they would copy more than they save).
//   - Region nodes read and write packed [T, E] values: a token-row value
//     made outside it is packed as it enters, Gather(Reshape(x, [-1, E]),
//     pack_index); a packed value read outside it is unpacked under its
//     own name: a graph output as Reshape(Gather(Concat(x, zeros[1, E]),
//     unpack_index), [B, S, E]), its padded rows zero; any other (the
//     attentions' Q, K and V: the packed QKV projection is unpacked once,
//     its Split runs padded as the view it was) as Reshape(Gather(x,
//     spread_index), [B, S, E]), its padded rows copies of a real row,
//     which the attentions mask; a [batch * seq, E] one is the Gather's
//     [B * S, E] result itself. A Shape of a packed [batch, seq, E] value
//     becomes a Slice of the mask's shape and E, computed while planning
//     (one of a [batch * seq, E] value refuses the model). Axis attributes
//     2 become -1.
//   - Three inputs follow the model's own: kPackIndexInput (int64 [T']),
//     kUnpackIndexInput and kSpreadIndexInput (int64 [B * S]), filled per
//     batch from the padding mask (engine/packing_indices.h).
// A model qualifies when every input is [batch, seq] (batch dynamic), it
// has at least one attention (attention_pattern.h), every attention adds a
// mask computed from one and the same input (the padding mask; real where
// nonzero), and the region is not empty. Real tokens' results are then
// those of the padded model as long as nothing but those attentions mixes
// positions; that is the model's author's assertion when they turn packing
// on (engine/model.h, ModelOptions::token_packing), and the corpus tests
// check it on real exports.
#ifndef COALESCE_ENGINE_TOKEN_PACKING_H_
#define COALESCE_ENGINE_TOKEN_PACKING_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/packing_indices.h"  // kPackIndexInput and its kin

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace coalesce {

class Model;

struct TokenPacking {
  int mask_input = -1;       // the padding mask's index among the model inputs
  int64_t region_nodes = 0;  // nodes that run on real tokens
  int64_t packs = 0;         // values packed as they enter the region
  int64_t unpacks = 0;       // values unpacked as they leave it
  // Whether rows of zeros after a batch (every input 0: a mask row without
  // tokens) leave the packed form's outputs for the batch's rows as they
  // are: a device may then pad packed batches to its graph sizes.
  bool pads_with_zero_rows = false;
};

// Rewrites `graph`, the optimized graph `padded` was built from, into its
// packed form (above). FailedPrecondition saying why when the model does
// not qualify (`graph` may then be partly rewritten); a probe plan's error
// as it is.
absl::StatusOr<TokenPacking> RewriteForTokenPacking(
    std::shared_ptr<const Model> padded, onnx::GraphProto* graph);

// The load-time check of a packed form: `padded` and `packed` run on the
// CPU on a probe batch of two rows (lengths S and S / 2, S the model's
// sequence length or 8; the mask 1 at real positions, an input named like
// input_ids ids 1 to 5 and every other input 0 and 1 at every position,
// varying along the row), and must agree at every
// real position within 1e-4 of the outputs' magnitude. FailedPrecondition
// saying so when they do not (positions mixed outside the attentions, a
// mask that means something else), or for an input type it cannot fill;
// a run's error as it is. When they agree, the packed form runs the probe
// again with a row of zeros after it, and *pads_with_zero_rows says whether
// its outputs for the probe's rows still agree (TokenPacking's field).
absl::Status CheckPackedAgreesWithPadded(
    const std::shared_ptr<const Model>& padded,
    const std::shared_ptr<const Model>& packed, int mask_input,
    bool* pads_with_zero_rows);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_TOKEN_PACKING_H_
