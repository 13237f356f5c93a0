// The operators a GraphProgram (graph_program.h) runs on a device: the
// device's kernel registry and its capability query. Each supported ONNX
// operator (and the optimizer's FusedGemm/FusedMatMul) is lowered, for one
// planned node with concrete shapes, onto DeviceKernels primitives; view
// operators (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) become
// aliases of their input and run nothing.
//
// Two checks, so a model that cannot run is refused before it serves:
//   CheckDeviceNode at load time: the operator and its attributes;
//   LowerDeviceNode at plan time: dtypes and shapes (float32 compute only).
// Both return Unimplemented with the reason when the device cannot run the
// node, InvalidArgument for a malformed one. Shared by every Device
// implementation (CUDA, simulated): the primitives are what differs.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_OPS_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_OPS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/device/device_kernels.h"
#include "engine/neutral_plan.h"

namespace coalesce {

// What a step sees when it runs: the device and this batch's addresses.
struct StepContext {
  Device& device;
  DeviceKernels& kernels;
  DeviceStream& stream;
  void* const* addresses;  // by value id: where each value lives this batch
  // The node's derived constants on the device (LoweredNode::derived and
  // derived_half).
  const float* const* derived;
  const Half* const* derived_half;
  // The node's scratch buffers (LoweredNode::scratch_bytes) in the arena.
  void* const* scratch;
};

using DeviceStep = std::function<absl::Status(const StepContext&)>;

struct LoweredNode {
  std::vector<DeviceStep> steps;
  // Value ids the steps read as data (constants among them are uploaded).
  std::vector<int> reads;
  // >= 0: the node's one output is a view of this value and no step runs.
  int view_of = -1;
  // Constants the lowering computed from the node's constant inputs
  // (BatchNormalization's per-channel scale and shift), uploaded with the
  // plan; steps read them as StepContext::derived[i].
  std::vector<std::vector<float>> derived;
  // Float32 constants the device reads as float16 (FP16 mode: weights),
  // StepContext::derived_half[i]. The program converts and uploads each
  // source once and shares it between the plans of every batch size.
  struct HalfConstant {
    const float* source = nullptr;  // the constant's host data
    int64_t count = 0;
  };
  std::vector<HalfConstant> derived_half;
  // Device memory the steps use while the node runs (FP16 mode: operands
  // converted to float16), StepContext::scratch[i]; garbage on entry.
  std::vector<size_t> scratch_bytes;
};

// How nodes are lowered. fp16: GEMMs and convolutions take float16
// operands and accumulate in float32 (DeviceKernels' FP16 mode). Constant
// operands (weights) are converted once per program (derived_half);
// computed ones by a ToHalf step into scratch before each product.
// Everything else, model inputs and outputs included, stays float32.
struct LoweringOptions {
  bool fp16 = false;
};

// The ONNX default-domain operators the device registry lowers, sorted
// (some only for some attributes, dtypes or shapes: CheckDeviceNode and
// LowerDeviceNode decide per node).
std::vector<std::string> DeviceOnnxOperators();

// OK when the device can run `node` for some shapes.
absl::Status CheckDeviceNode(const PlanNode& node, int64_t opset);

// The steps of `node` (not folded) in `plan`. When `allow_view` is false
// (the output is a model output, written to the caller's buffer), a view
// operator becomes a device-to-device copy.
absl::StatusOr<LoweredNode> LowerDeviceNode(const NeutralPlan& plan,
                                            const PlanNode& node,
                                            bool allow_view,
                                            LoweringOptions options = {});

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_OPS_H_
