#include "engine/device/device_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/device/device_ops.h"
#include "engine/device/device_storage.h"
#include "engine/device/status_context.h"

namespace coalesce {
namespace {

std::string StorageName(const NeutralPlan& plan,
                        const std::vector<DeviceFloat>& storage, int id) {
  if (id < 0) return "";
  if (plan.values[id].storage == ValueStorage::kConstant) return "const";
  if (plan.values[id].info.dtype != DataType::kFp32)
    return std::string(DataTypeName(plan.values[id].info.dtype));
  return storage[id] == DeviceFloat::kHalf ? "fp16" : "fp32";
}

}  // namespace

absl::StatusOr<DevicePlanSummary> DescribeDevicePlan(const NeutralPlan& plan,
                                                     bool fp16) {
  const std::vector<DeviceFloat> storage = PlanDeviceStorage(plan, fp16);
  DevicePlanSummary summary;
  for (const PlanNode& node : plan.nodes) {
    if (node.folded) continue;
    const bool allow_view =
        plan.values[node.outputs[0]].storage == ValueStorage::kIntermediate;
    auto lowered = LowerDeviceNode(plan, node, allow_view,
                                   {.fp16 = fp16, .storage = &storage});
    if (!lowered.ok()) return WithContext(lowered.status(), NodeLabel(node));
    DevicePlanNode out;
    out.name = *node.name;
    out.op = *node.op_type;
    auto channels_last = node.attributes->GetInt("channels_last", 0);
    out.channels_last = channels_last.ok() && *channels_last != 0;
    for (int id : node.inputs)
      out.inputs.push_back(StorageName(plan, storage, id));
    for (int id : node.outputs)
      out.outputs.push_back(StorageName(plan, storage, id));
    out.steps = static_cast<int>(lowered->steps.size());
    summary.nodes.push_back(std::move(out));
  }
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlannedValue& v = plan.values[id];
    if (v.info.dtype != DataType::kFp32) continue;
    if (storage[id] == DeviceFloat::kHalf) {
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
