// PlanLowering: which device steps stand for which nodes of one plan. Each
// node lowers on its own (LowerDeviceNode), except:
//   - the nodes of a fused attention (attention_pattern.h): they lower
//     together, as one DeviceKernels::Attention step, at the site's last
//     node, and the others run nothing;
//   - a residual Add whose result a LayerNormalization over the last axis
//     reads (a transformer's residual + LayerNorm, the embedding sum +
//     LayerNorm): the LayerNorm's step adds it (LowerResidualLayerNorm).
//     The Add then runs nothing; it is skipped when the LayerNorm is its
//     result's only reader, else it keeps its result's memory, which the
//     LayerNorm writes (its other readers come after the LayerNorm).
//     One operand has the result's shape; the other too, or it repeats
//     over the leading axes (a position embedding [1, S, E]);
//   - a fused attention's row_views: Transposes lowered as views of their
//     inputs, moving nothing (the site reads the rows in that order);
//   - a fused attention of a token-packed plan that reads and writes
//     packed rows (engine/packed_rows.h): its unpacking and packing
//     Gathers and Reshapes run nothing; the attention reads the packed
//     rows and writes the packing Gather's output itself.
// Shared by GraphProgram (which binds the steps) and DescribeDevicePlan
// (which reports them), so both see the same plan. Immutable after
// construction; `plan` must outlive it.
#ifndef COALESCE_ENGINE_DEVICE_PLAN_LOWERING_H_
#define COALESCE_ENGINE_DEVICE_PLAN_LOWERING_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/attention_pattern.h"
#include "engine/device/device_ops.h"
#include "engine/neutral_plan.h"
#include "engine/packed_rows.h"

namespace coalesce {

class PlanLowering {
 public:
  // fuse_attention: find the plan's attentions the device runs fused (a
  // head dimension of at most kMaxAttentionHeadDim); false: none.
  PlanLowering(const NeutralPlan& plan, bool fuse_attention);

  const std::vector<AttentionSite>& attention() const { return attention_; }

  // True when node n runs nothing of its own: folded, one of a fused
  // attention's nodes before its last, or one of its packed-rows moves.
  bool Skips(int n) const;

  // The fused attention whose last node is n, or null.
  const AttentionSite* AttentionEndingAt(int n) const;

  // Its packed rows, when the fused attention ending at n reads and
  // writes them; else null.
  const PackedRowsSite* PackedRowsEndingAt(int n) const;

  // The residual Add fused into LayerNormalization node n, or null.
  const FusedResidual* ResidualInto(int n) const;

  // The steps of node n (REQUIRES: !Skips(n)): LowerDeviceNode's, the
  // fused attention's at its last node, the residual LayerNorm's, or none
  // for an Add fused into its LayerNorm.
  absl::StatusOr<LoweredNode> Lower(int n, bool allow_view,
                                    LoweringOptions options) const;

 private:
  void FindResidualNorms();
  // By value id: the node writing it (-1: none) and the nodes reading it,
  // ascending; folded nodes left out.
  struct ValueUses {
    std::vector<int> producer;
    std::vector<std::vector<int>> readers;
  };
  std::optional<FusedResidual> MatchResidual(int norm, const ValueUses& uses,
                                             int* add) const;

  const NeutralPlan& plan_;
  std::vector<AttentionSite> attention_;
  std::vector<PackedRowsSite> packed_;  // by site; pack_index -1: padded
  std::vector<int> site_of_node_;       // by node: index in attention_, or -1
  std::vector<bool> row_view_;          // by node: one of a site's row_views
  // By LayerNormalization node: the Add fused into it (residual >= 0).
  std::vector<FusedResidual> residual_into_;
  std::vector<int> norm_of_add_;  // by Add node: its LayerNorm, or -1
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_PLAN_LOWERING_H_
