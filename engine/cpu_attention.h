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

// The kernel's views of `site` over the plan's value addresses (`data`, by
// value id).
kernels::AttentionViews CpuAttentionViews(const AttentionSite& site,
                                          char* const* data);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CPU_ATTENTION_H_
