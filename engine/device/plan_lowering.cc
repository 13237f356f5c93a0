#include "engine/device/plan_lowering.h"

#include <algorithm>

#include "engine/device/device_ops_internal.h"

namespace coalesce {

PlanLowering::PlanLowering(const NeutralPlan& plan, bool fuse_attention)
    : plan_(plan),
      site_of_node_(plan.nodes.size(), -1),
      row_view_(plan.nodes.size(), false),
      residual_into_(plan.nodes.size()),
      norm_of_add_(plan.nodes.size(), -1) {
  if (fuse_attention) {
    for (AttentionSite& site : FindAttention(plan)) {
      if (site.head_dim > kMaxAttentionHeadDim) continue;
      for (int n : site.nodes)
        site_of_node_[n] = static_cast<int>(attention_.size());
      for (int n : site.row_views) row_view_[n] = true;
      packed_.push_back(PackedRowsOf(plan, site));
      // Its moves run nothing: they lie before or after the site, whose
      // last node runs it.
      for (int n : packed_.back().nodes)
        site_of_node_[n] = static_cast<int>(attention_.size());
      attention_.push_back(std::move(site));
    }
  }
  FindResidualNorms();
}

void PlanLowering::FindResidualNorms() {
  ValueUses uses;
  uses.producer.assign(plan_.values.size(), -1);
  uses.readers.resize(plan_.values.size());
  for (size_t n = 0; n < plan_.nodes.size(); ++n) {
    const PlanNode& node = plan_.nodes[n];
    if (node.folded) continue;
    for (int v : node.outputs)
      if (v >= 0) uses.producer[v] = static_cast<int>(n);
    for (int v : node.inputs)
      if (v >= 0) uses.readers[v].push_back(static_cast<int>(n));
  }
  for (size_t n = 0; n < plan_.nodes.size(); ++n) {
    int add = -1;
    std::optional<FusedResidual> fused =
        MatchResidual(static_cast<int>(n), uses, &add);
    if (!fused) continue;
    residual_into_[n] = *fused;
    norm_of_add_[add] = static_cast<int>(n);
  }
}

// LayerNormalization `norm` reading an Add's result, as that Add fused in:
// nullopt when the pattern (plan_lowering.h) does not hold.
std::optional<FusedResidual> PlanLowering::MatchResidual(int norm,
                                                         const ValueUses& uses,
                                                         int* add) const {
  const PlanNode& ln = plan_.nodes[norm];
  if (ln.folded || !ln.domain->empty() || *ln.op_type != "LayerNormalization" ||
      site_of_node_[norm] >= 0 || ln.inputs.empty() || ln.inputs[0] < 0)
    return std::nullopt;
  const int sum = ln.inputs[0];
  const Shape& dims = plan_.values[sum].info.shape;
  const int64_t rank = static_cast<int64_t>(dims.size());
  absl::StatusOr<int64_t> axis = ln.attributes->GetInt("axis", -1);
  if (!axis.ok() || rank == 0) return std::nullopt;
  const int64_t first = *axis < 0 ? *axis + rank : *axis;
  if (first < 0 || first >= rank) return std::nullopt;
  // The Add writing `sum`, and where else `sum` is read.
  const int producer = uses.producer[sum];
  bool later_readers_only = true, other_readers = false;
  for (int n : uses.readers[sum]) {
    if (n == norm) continue;
    other_readers = true;
    if (n < norm) later_readers_only = false;
  }
  // The LayerNorm's own scale or bias slot reading `sum` (a merge of common
  // subexpressions can make one node read a value twice) reads it as
  // stored, so the sum must be written.
  for (size_t i = 1; i < ln.inputs.size(); ++i)
    if (ln.inputs[i] == sum) other_readers = true;
  if (std::find(plan_.outputs.begin(), plan_.outputs.end(), sum) !=
      plan_.outputs.end())
    other_readers = true;
  if (producer < 0 || !later_readers_only || site_of_node_[producer] >= 0)
    return std::nullopt;
  const PlanNode& a = plan_.nodes[producer];
  if (!a.domain->empty() || *a.op_type != "Add" || a.inputs.size() != 2 ||
      a.outputs.size() != 1)
    return std::nullopt;
  for (int id : {a.inputs[0], a.inputs[1], sum})
    if (id < 0 || plan_.values[id].info.dtype != DataType::kFp32)
      return std::nullopt;
  const int64_t cols = device_ops::Product(dims, first, dims.size());
  for (int side : {0, 1}) {
    const int x = a.inputs[side], r = a.inputs[1 - side];
    if (plan_.values[x].info.shape != dims) continue;
    // r: leading 1s, then a suffix of dims covering the normalized axes.
    Shape r_dims = plan_.values[r].info.shape;
    while (!r_dims.empty() && r_dims.front() == 1 &&
           r_dims.size() > static_cast<size_t>(rank - first))
      r_dims.erase(r_dims.begin());
    if (r_dims.size() < static_cast<size_t>(rank - first) ||
        r_dims.size() > dims.size() ||
        !std::equal(r_dims.begin(), r_dims.end(), dims.end() - r_dims.size()))
      continue;
    if (cols == 0) return std::nullopt;
    *add = producer;
    return FusedResidual{.x = x,
                         .residual = r,
                         .sum = sum,
                         .residual_rows = device_ops::Count(r_dims) / cols,
                         .write_sum = other_readers};
  }
  return std::nullopt;
}

bool PlanLowering::Skips(int n) const {
  if (plan_.nodes[n].folded) return true;
  const int norm = norm_of_add_[n];
  if (norm >= 0 && !residual_into_[norm].write_sum) return true;
  const int site = site_of_node_[n];
  return site >= 0 && attention_[site].nodes.back() != n;
}

const AttentionSite* PlanLowering::AttentionEndingAt(int n) const {
  const int site = site_of_node_[n];
  if (site < 0 || attention_[site].nodes.back() != n) return nullptr;
  return &attention_[site];
}

const PackedRowsSite* PlanLowering::PackedRowsEndingAt(int n) const {
  if (AttentionEndingAt(n) == nullptr) return nullptr;
  const PackedRowsSite& packed = packed_[site_of_node_[n]];
  return packed.pack_index >= 0 ? &packed : nullptr;
}

const FusedResidual* PlanLowering::ResidualInto(int n) const {
  return residual_into_[n].residual >= 0 ? &residual_into_[n] : nullptr;
}

absl::StatusOr<LoweredNode> PlanLowering::Lower(int n, bool allow_view,
                                                LoweringOptions options) const {
  if (const AttentionSite* site = AttentionEndingAt(n))
    return LowerAttention(*site, options, packed_[site_of_node_[n]]);
  if (norm_of_add_[n] >= 0) return LoweredNode{};  // its LayerNorm adds it
  if (const FusedResidual* fused = ResidualInto(n))
    return LowerResidualLayerNorm(plan_, plan_.nodes[n], *fused, options);
  if (row_view_[n]) {
    // Its site reads the dense layer's rows in this order (row_views).
    const PlanNode& node = plan_.nodes[n];
    if (!allow_view) {
      return absl::InternalError(
          "a Transpose an attention reads as a view cannot be one");
    }
    LoweredNode lowered;
    lowered.reads = {node.inputs[0]};
    lowered.view_of = node.inputs[0];
    return lowered;
  }
  return LowerDeviceNode(plan_, plan_.nodes[n], allow_view, options);
}

}  // namespace coalesce
