#include "engine/device/device_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/device/device_ops.h"
#include "engine/device/device_storage.h"
#include "engine/device/plan_lowering.h"
#include "engine/device/status_context.h"

namespace coalesce {
namespace {

std::string StorageName(const NeutralPlan& plan,
                        const std::vector<DeviceFloat>& storage, int id) {
  if (id < 0) return "";
  if (plan.values[id].storage == ValueStorage::kConstant) return "const";
  if (plan.values[id].info.dtype != DataType::kFp32)
    return std::string(DataTypeName(plan.values[id].info.dtype));
  return DeviceFloatName(storage[id]);
}

}  // namespace

absl::StatusOr<DevicePlanSummary> DescribeDevicePlan(const NeutralPlan& plan,
                                                     DeviceFloat activations,
                                                     bool fuse_attention) {
  const PlanLowering lowering(plan, fuse_attention);
  const std::vector<DeviceFloat> storage =
      PlanDeviceStorage(plan, activations, lowering.attention());
  auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int id : ids) out.push_back(StorageName(plan, storage, id));
    return out;
  };
  DevicePlanSummary summary;
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    if (lowering.Skips(static_cast<int>(n))) continue;
    const PlanNode& node = plan.nodes[n];
    const bool allow_view =
        plan.values[node.outputs[0]].storage == ValueStorage::kIntermediate;
    auto lowered =
        lowering.Lower(static_cast<int>(n), allow_view,
                       {.activations = activations, .storage = &storage});
    if (!lowered.ok()) return WithContext(lowered.status(), NodeLabel(node));
    DevicePlanNode out;
    out.name = *node.name;
    out.op = *node.op_type;
    auto channels_last = node.attributes->GetInt("channels_last", 0);
    out.channels_last = channels_last.ok() && *channels_last != 0;
    out.inputs = names(node.inputs);
    out.outputs = names(node.outputs);
    if (const AttentionSite* site =
            lowering.AttentionEndingAt(static_cast<int>(n))) {
      out.op = "Attention";
      out.channels_last = false;
      out.inputs = names(
          {site->q.value, site->k.value, site->v.value, site->mask.value});
      out.outputs = names({site->out.value});
      if (const PackedRowsSite* packed =
              lowering.PackedRowsEndingAt(static_cast<int>(n))) {
        out.op = "PackedAttention";  // over the packed rows
        out.inputs =
            names({packed->rows_in, packed->pack_index, site->mask.value});
        out.outputs = names({packed->rows_out});
      }
    }
    if (const FusedResidual* fused =
            lowering.ResidualInto(static_cast<int>(n))) {
      out.op = "AddLayerNorm";  // the Add before it runs in it
      std::vector<int> inputs = {fused->x, fused->residual};
      inputs.insert(inputs.end(), node.inputs.begin() + 1, node.inputs.end());
      out.inputs = names(inputs);
    }
    out.steps = static_cast<int>(lowered->steps.size());
    summary.nodes.push_back(std::move(out));
  }
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlannedValue& v = plan.values[id];
    if (v.info.dtype != DataType::kFp32) continue;
    if (storage[id] != DeviceFloat::kFloat) {
      ++summary.half_values;
    } else if (v.storage == ValueStorage::kIntermediate) {
      ++summary.float_values;
    }
  }
  return summary;
}

std::string DevicePlanTable(const DevicePlanSummary& summary) {
  std::string table = absl::StrFormat("%-20s %-5s %-28s %-12s %s\n", "op",
                                      "nhwc", "inputs", "outputs", "steps");
  for (const DevicePlanNode& n : summary.nodes) {
    absl::StrAppendFormat(&table, "%-20s %-5s %-28s %-12s %d  %s\n", n.op,
                          n.channels_last ? "yes" : "",
                          absl::StrJoin(n.inputs, ","),
                          absl::StrJoin(n.outputs, ","), n.steps, n.name);
  }
  absl::StrAppend(&table, summary.half_values, " values float16, ",
                  summary.float_values, " intermediates float32\n");
  return table;
}

}  // namespace coalesce
