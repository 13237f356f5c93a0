// DescribeDevicePlan: what a GraphProgram (graph_program.h) runs for one
// plan, found without a device: for each node that runs, its operator, its
// layout, how each of its values is stored (device_storage.h) and how many
// device steps it lowers to. The lowering decisions (which nodes are fused,
// where the layout changes, which precision each value has) are
// device-neutral, so tests check them on every machine, and
// `coalesce-onnx-run --device-plan` prints them.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_PLAN_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/device_kernels.h"
#include "engine/neutral_plan.h"

namespace coalesce {

struct DevicePlanNode {
  std::string name;
  std::string op;              // "FusedConv", "Transpose", ...; "Attention" and
                               // "AddLayerNorm" for fusions (plan_lowering.h)
  bool channels_last = false;  // the node's channels_last attribute
  // Per input and output: "fp16", "bf16" or "fp32" for float values as
  // stored on
  // the device, the dtype's name for others, "const" for a constant (the
  // lowering converts weights once), "" for an omitted input.
  std::vector<std::string> inputs, outputs;
  int steps = 0;  // device steps (0: a view, or an Add run by its LayerNorm)
};

struct DevicePlanSummary {
  std::vector<DevicePlanNode> nodes;  // those not folded, in plan order
  int half_values = 0;                // float values stored in 16 bits
  int float_values = 0;               // float intermediates stored as float32
};

// A fused attention (plan_lowering.h) is one node, op "Attention", named
// after its last node, with inputs q, k, v and the mask ("" when none); one
// over packed rows is op "PackedAttention", inputs the packed rows, the
// pack index and the mask, output the packed rows it writes.
// activations and fuse_attention as GraphProgramOptions'.
// Errors: LowerDeviceNode's, naming the node.
absl::StatusOr<DevicePlanSummary> DescribeDevicePlan(
    const NeutralPlan& plan, DeviceFloat activations,
    bool fuse_attention = true);

// One line per node: op, layout, input and output storage, steps.
std::string DevicePlanTable(const DevicePlanSummary& summary);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_PLAN_H_
