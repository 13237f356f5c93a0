// CpuAttention: the exported attentions (engine/attention_pattern.h) that the
// CPU plan runs as one kernel (kernels/cpu/attention.h) instead of node by
// node: the products, the scale, the mask's Add, the Softmax and the head
// split and merge moves become one step that reads Q, K and V where their
// projections wrote them and writes the merged heads, skipping the keys
// every row masks. Taken: float32 Q, K, V, mask and output, the head
// dimension contiguous. A site's row views (nn.MultiheadAttention's
// Transposes around its projections) then move nothing: the plan runs each
// as its input's bytes under the Transpose's shape (ExecutionPlan). Pure
// functions of the plan.
#ifndef COALESCE_ENGINE_CPU_ATTENTION_H_
#define COALESCE_ENGINE_CPU_ATTENTION_H_

#include <vector>

#include "engine/attention_pattern.h"
#include "engine/neutral_plan.h"
#include "kernels/cpu/attention.h"

namespace coalesce {

// The sites of `plan` the CPU kernel takes, in FindAttention's order.
std::vector<AttentionSite> CpuAttentionSites(const NeutralPlan& plan);

// A site of a token-packed plan (engine/token_packing.h) that reads and
// writes packed rows: its Q, K and V are views of one value only it reads,
// Reshape(Gather(rows_in, spread_index)) ([B, S, W] from [T', W]), and its
// output only goes on packed, Gather(Reshape(out), pack_index) into
// rows_out [T', E]. The kernel then reads rows_in and writes rows_out
// directly, per sequence and over its real rows only (the pack index gives
// them: kernels::AttentionViews' offsets and positions), and `nodes` (the
// two Gathers and two Reshapes) do not run: no padded query rows, no
// copies.
struct PackedRowsSite {
  int pack_index = -1;  // the value of the plan's kPackIndexInput
  int rows_in = -1, rows_out = -1;
  std::vector<int> nodes;
};

// The packed-rows form of `site` of `plan`, or pack_index -1 when the site
// does not read and write packed rows as above (a padded plan, or a site
// whose Q, K, V or output has other readers).
PackedRowsSite CpuPackedRows(const NeutralPlan& plan,
                             const AttentionSite& site);

// The kernel's views of `site` over the plan's value addresses (`data`, by
// value id).
kernels::AttentionViews CpuAttentionViews(const AttentionSite& site,
                                          char* const* data);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CPU_ATTENTION_H_
