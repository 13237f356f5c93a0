#include "engine/device/plan_lowering.h"

#include <algorithm>

namespace coalesce {

PlanLowering::PlanLowering(const NeutralPlan& plan, bool fuse_attention)
    : plan_(plan), site_of_node_(plan.nodes.size(), -1) {
  if (!fuse_attention) return;
  for (AttentionSite& site : FindAttention(plan)) {
    if (site.head_dim > kMaxAttentionHeadDim) continue;
    for (int n : site.nodes)
      site_of_node_[n] = static_cast<int>(attention_.size());
    attention_.push_back(std::move(site));
  }
}

bool PlanLowering::Skips(int n) const {
  if (plan_.nodes[n].folded) return true;
  const int site = site_of_node_[n];
  return site >= 0 && attention_[site].nodes.back() != n;
}

const AttentionSite* PlanLowering::AttentionEndingAt(int n) const {
  const int site = site_of_node_[n];
  if (site < 0 || attention_[site].nodes.back() != n) return nullptr;
  return &attention_[site];
}

absl::StatusOr<LoweredNode> PlanLowering::Lower(int n, bool allow_view,
                                                LoweringOptions options) const {
  if (const AttentionSite* site = AttentionEndingAt(n))
    return LowerAttention(*site, options);
  return LowerDeviceNode(plan_, plan_.nodes[n], allow_view, options);
}

}  // namespace coalesce
