#include "engine/packed_rows.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "engine/packing_indices.h"
#include "engine/shape.h"

namespace coalesce {
namespace {

// The plan's input named `name`, or -1.
int InputNamed(const NeutralPlan& plan, const char* name) {
  for (int v : plan.inputs)
    if ((*plan.value_names)[v] == name) return v;
  return -1;
}

// The one node running in `plan` that writes `value`, and every running
// node that reads it.
struct Uses {
  int producer = -1;
  std::vector<int> readers;
};
Uses UsesOf(const NeutralPlan& plan, int value) {
  Uses u;
  for (int n = 0; n < static_cast<int>(plan.nodes.size()); ++n) {
    const PlanNode& node = plan.nodes[n];
    if (node.folded) continue;
    for (int o : node.outputs)
      if (o == value) u.producer = n;
    if (std::find(node.inputs.begin(), node.inputs.end(), value) !=
        node.inputs.end())
      u.readers.push_back(n);
  }
  return u;
}

bool IsOp(const NeutralPlan& plan, int n, const char* op) {
  return n >= 0 && *plan.nodes[n].op_type == op;
}

// A Gather of rows (axis 0) by `index`.
bool IsRowGather(const NeutralPlan& plan, int n, int index) {
  if (!IsOp(plan, n, "Gather") || plan.nodes[n].inputs.size() != 2 ||
      plan.nodes[n].inputs[1] != index)
    return false;
  absl::StatusOr<int64_t> axis = plan.nodes[n].attributes->GetInt("axis", 0);
  return axis.ok() && *axis == 0;
}

// Whether a view of [batch, heads, rows, cols] over a [B, S, W] or
// [B * S, W] value reads its rows as they lie: batch S rows apart (any
// stride for one entry: the matcher gives an axis of extent 1 stride 0), a
// row W apart, every head inside the row.
bool ViewsRows(const AttentionOperand& o, const PlannedValue& v,
               const AttentionSite& site) {
  const Shape& s = v.info.shape;
  const int64_t width = s.empty() ? 0 : s.back(), seq = site.q_len;
  return (s.size() == 2 || s.size() == 3) &&
         ElementCount(s) == site.batch * seq * width &&
         (o.strides[0] == seq * width || site.batch == 1) &&
         o.strides[2] == width &&
         o.offset + (site.heads - 1) * o.strides[1] + site.head_dim <= width;
}

bool IsIntermediate(const NeutralPlan& plan, int value) {
  return plan.values[value].storage == ValueStorage::kIntermediate;
}

}  // namespace

PackedRowsSite PackedRowsOf(const NeutralPlan& plan,
                            const AttentionSite& site) {
  PackedRowsSite none, p;
  p.pack_index = InputNamed(plan, kPackIndexInput);
  const int spread = InputNamed(plan, kSpreadIndexInput);
  const int qkv = site.q.value;
  if (p.pack_index < 0 || spread < 0 || site.k.value != qkv ||
      site.v.value != qkv || site.q_len != site.kv_len ||
      !IsIntermediate(plan, qkv) || !IsIntermediate(plan, site.out.value))
    return none;
  const std::vector<int>& inside = site.nodes;
  const auto only_inside = [&](const std::vector<int>& readers) {
    for (int r : readers)
      if (std::find(inside.begin(), inside.end(), r) == inside.end())
        return false;
    return true;
  };
  // In: qkv = Reshape(Gather(rows_in, spread)), read only by the site.
  const Uses unpacked = UsesOf(plan, qkv);
  if (!IsOp(plan, unpacked.producer, "Reshape") ||
      !only_inside(unpacked.readers))
    return none;
  const int gathered = plan.nodes[unpacked.producer].inputs[0];
  const Uses g = UsesOf(plan, gathered);
  if (!IsRowGather(plan, g.producer, spread) || g.readers.size() != 1 ||
      !IsIntermediate(plan, gathered))
    return none;
  p.rows_in = plan.nodes[g.producer].inputs[0];
  p.nodes = {g.producer, unpacked.producer};
  // Out: rows_out = Gather(out, pack), or Gather(Reshape(out), pack),
  // nothing else reading (the matcher's head merge may end at the Reshape).
  int flat = site.out.value;
  Uses f = UsesOf(plan, flat);
  if (f.readers.size() == 1 && IsOp(plan, f.readers[0], "Reshape")) {
    p.nodes.push_back(f.readers[0]);
    flat = plan.nodes[f.readers[0]].outputs[0];
    f = UsesOf(plan, flat);
  }
  if (f.readers.size() != 1 || !IsRowGather(plan, f.readers[0], p.pack_index) ||
      !IsIntermediate(plan, flat))
    return none;
  p.nodes.push_back(f.readers[0]);
  p.rows_out = plan.nodes[f.readers[0]].outputs[0];
  for (const AttentionOperand* o : {&site.q, &site.k, &site.v}) {
    if (!ViewsRows(*o, plan.values[qkv], site)) return none;
  }
  if (!ViewsRows(site.out, plan.values[site.out.value], site)) return none;
  // Rows of the same width on both sides of each move.
  const auto width = [&](int value) {
    return plan.values[value].info.shape.back();
  };
  for (auto [a, b] : {std::pair{p.rows_in, qkv}, std::pair{gathered, qkv},
                      std::pair{p.rows_out, site.out.value},
                      std::pair{flat, site.out.value}}) {
    if (plan.values[a].info.shape.size() != 2 || width(a) != width(b))
      return none;
  }
  // One packed row per pack index entry, on both sides.
  const PlannedValue& pack = plan.values[p.pack_index];
  if (pack.info.dtype != DataType::kInt64 || pack.info.shape.size() != 1 ||
      plan.values[p.rows_in].info.shape[0] != pack.info.shape[0] ||
      plan.values[p.rows_out].info.shape[0] != pack.info.shape[0])
    return none;
  p.rows = pack.info.shape[0];
  return p;
}

}  // namespace coalesce
