// FindAttention: the scaled-dot-product attentions an exported graph spells
// out node by node, found in a NeutralPlan (concrete shapes), so an executor
// can run each as one fused attention (issue 27). What it recognizes:
//
//   q, k, v   three values (say the Q, K and V projections' outputs), each
//             reaching the products through moves only: Reshape, Transpose,
//             Squeeze, Unsqueeze, Flatten, Identity (the head split, and
//             K's transposition, however an exporter wrote them), and
//             scalar Mul/Div by constants (the scale, or its square root on
//             each side, as PyTorch's exported SDPA does); and at their
//             start a Split, when each of its outputs is one of this
//             site's q, k and v (one packed QKV projection, as GPT-2's or
//             the projection fusion's): they are then views, at offsets,
//             of the Split's input; or Gathers of one entry each (a
//             constant scalar index) of a value made by moves from a float
//             one, when they are all of that value's readers and each is
//             one of q, k and v (nn.MultiheadAttention's exports): views,
//             at offsets, of that float value, or of the rows of the dense
//             layer that made it, in their order before a Transpose that
//             only reordered them (row_views below);
//   s = MatMul(q', k')  [.., q_len, head_dim] x [.., head_dim, kv_len];
//   then scalar Mul/Div by constants, then at most one Add of a mask (any
//   float value that broadcasts to s), then Softmax over the last axis;
//   optionally Where(IsNaN(p), 0, p) (PyTorch's guard for fully masked rows);
//   o = MatMul(p, v')  [.., q_len, head_dim];
//   then moves of o (the head merge) as far as o stays a strided view of
//   the last value reached, its rows in the order a Transpose after the
//   out-projection gives them where that Transpose can be a view
//   (row_views below).
//
// Every interior value must have its one use inside the pattern and must
// not be a model output; q, k and v must be read with the head dimension
// contiguous. Products of rank 3 are one head per batch entry. Nothing here
// depends on a device: the device lowering and the CPU engine both read the
// sites. Pure function of the plan.
#ifndef COALESCE_ENGINE_ATTENTION_PATTERN_H_
#define COALESCE_ENGINE_ATTENTION_PATTERN_H_

#include <array>
#include <cstdint>
#include <vector>

#include "engine/neutral_plan.h"

namespace coalesce {

// A 4-D strided view [batch, heads, rows, cols] of one plan value: element
// strides from the value's first element. For q, k, v and out, rows are
// sequence positions and cols the head dimension (stride 1); for the mask,
// rows are query and cols key positions (0 where it broadcasts).
struct AttentionOperand {
  int value = -1;  // -1: absent (a mask only)
  std::array<int64_t, 4> strides = {0, 0, 0, 0};
  int64_t offset = 0;  // elements from the value's first to the view's
};

struct AttentionSite {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  AttentionOperand q, k, v, mask, out;
  float scale = 1.0f;             // product of every scalar factor found
  bool zero_masked_rows = false;  // the IsNaN/Where guard was there
  // The plan nodes the fused attention replaces, ascending; the last one
  // writes out.value, and no other node reads their interior values.
  std::vector<int> nodes;
  // Transpose nodes (each keeping the last axis) that an executor must run
  // as views of their inputs, moving nothing, because a dense layer next
  // to them (rows computed independently) takes its rows in the other
  // order: one read only by the in-projection whose result only this site
  // reads (the site's strides read the projection's rows in the
  // Transpose's input order), or one that the out-projection's result
  // reaches through moves, when out.value is read only by that projection
  // (the site writes the rows in the Transpose's output order, the moves
  // between are views). nn.MultiheadAttention's exports transpose [B, S,
  // E] to [S, B, E] before the in-projection and back after the
  // out-projection. Not among `nodes`: the projections still run.
  std::vector<int> row_views;
};

// Every attention of `plan`, in the order of their last nodes. Sites never
// share a node.
std::vector<AttentionSite> FindAttention(const NeutralPlan& plan);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_ATTENTION_PATTERN_H_
