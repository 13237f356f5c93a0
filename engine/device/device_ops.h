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
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/attention_pattern.h"
#include "engine/device/device.h"
#include "engine/device/device_kernels.h"
#include "engine/neutral_plan.h"
#include "engine/packed_rows.h"

namespace coalesce {

// What a step sees when it runs: the device and this batch's addresses.
struct StepContext {
  Device& device;
  DeviceKernels& kernels;
  DeviceStream& stream;
  void* const* addresses;  // by value id: where each value lives this batch
  // The node's derived constants on the device (LoweredNode::derived and
  // converted).
  const float* const* derived;
  const void* const* converted;
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
  // Non-empty: the values the steps write, in place of the node's outputs
  // (a fused attention over packed rows writes the packing Gather's
  // output; the node's own is never written). Memory is planned by these.
  std::vector<int> writes;
  // Constants the lowering computed from the node's constant inputs
  // (BatchNormalization's per-channel scale and shift), uploaded with the
  // plan; steps read them as StepContext::derived[i].
  std::vector<std::vector<float>> derived;
  // Float32 constants the device reads in another form (FP16 mode's
  // float16 weights; channels-last convolution weights as KRSC),
  // StepContext::converted[i]. The program converts and uploads each form
  // of a source once and shares it between the plans of every batch size.
  struct ConvertedConstant {
    const float* source = nullptr;  // the constant's host data
    int64_t count = 0;
    DeviceFloat type = DeviceFloat::kFloat;
    // Non-zero: the source is convolution weights [O, I, H, W] with these
    // dims, stored as [O, H, W, I] (cuDNN's KRSC, for NHWC convolutions).
    int64_t oihw[4] = {0, 0, 0, 0};
    auto Key() const {
      return std::make_tuple(source, count, type, oihw[0], oihw[1], oihw[2],
                             oihw[3]);
    }
  };
  std::vector<ConvertedConstant> converted;
  // Device memory the steps use while the node runs (FP16 and BF16 modes:
  // operands converted to 16 bits), StepContext::scratch[i]; garbage on
  // entry.
  std::vector<size_t> scratch_bytes;
};

// How nodes are lowered. activations kHalf or kBFloat16 (FP16 or BF16
// mode): GEMMs and convolutions take operands of that 16-bit type and
// accumulate in float32. Constant operands (weights) are converted once per
// program (converted); computed ones are read as stored when `storage`
// keeps them in that type, else converted by a ToHalf step into scratch
// before each product. kFloat: float32 products. `storage` (by value id;
// null: all float32) says how each value is stored (device_storage.h);
// nodes read and write values as stored there.
struct LoweringOptions {
  DeviceFloat activations = DeviceFloat::kFloat;
  const std::vector<DeviceFloat>* storage = nullptr;
  bool half() const { return activations != DeviceFloat::kFloat; }
};

// What a node's lowering does with float16 storage (device_storage.h):
//   kNone: reads and writes float32 only;
//   kCompute: reads every float input as stored and writes its float
//     outputs as stored, computing in float32 (activations, arithmetic,
//     convolutions, pooling, BatchNormalization);
//   kMove: moves elements without converting; its float inputs and
//     outputs are stored alike (views, Concat, Transpose);
//   kProducts: reads float16 operands 0 and 1 of a product and writes its
//     result as stored; input 2 (a bias or C) stays float32, a MatMul's
//     residual (input 3) is read as stored (Gemm, MatMul);
//   kResult: reads float32, writes its result as stored (Softmax: scores
//     plus a mask of float32's lowest value, -3.4e38, would overflow float16
//     to -inf, and a fully masked row would become NaN where float32 gives
//     a uniform row).
enum class DeviceHalfUse { kNone, kCompute, kMove, kProducts, kResult };
DeviceHalfUse HalfUseOf(const PlanNode& node);

// The ONNX default-domain operators the device registry lowers, sorted
// (some only for some attributes, dtypes or shapes: CheckDeviceNode and
// LowerDeviceNode decide per node).
std::vector<std::string> DeviceOnnxOperators();

// OK when the device can run `node` for some shapes.
absl::Status CheckDeviceNode(const PlanNode& node, int64_t opset);

// The steps of one fused attention (attention_pattern.h): they read the
// site's q, k, v and mask values as stored and write its out value, in place
// of every node of site.nodes. With `packed` (its pack_index >= 0,
// engine/packed_rows.h): they read q, k and v from
// packed.rows_in and write packed.rows_out, per sequence over the rows the
// pack index gives (AttentionArgs::pack), in place of packed.nodes too.
// Unimplemented when the device cannot run it (a head dimension above
// kMaxAttentionHeadDim).
absl::StatusOr<LoweredNode> LowerAttention(const AttentionSite& site,
                                           LoweringOptions options = {},
                                           const PackedRowsSite& packed = {});

// A residual Add fused into the LayerNormalization that reads its result
// (plan_lowering.h): the LayerNorm normalizes x + residual, the residual
// [residual_rows, cols] repeated over x's rows, and writes the Add's
// result `sum` too when write_sum (it has other readers).
struct FusedResidual {
  int x = -1, residual = -1, sum = -1;  // value ids
  int64_t residual_rows = 0;
  bool write_sum = false;
};

// The steps of LayerNormalization `norm` with `fused`'s Add in it.
absl::StatusOr<LoweredNode> LowerResidualLayerNorm(
    const NeutralPlan& plan, const PlanNode& norm, const FusedResidual& fused,
    LoweringOptions options = {});

// The steps of `node` (not folded) in `plan`. When `allow_view` is false
// (the output is a model output, written to the caller's buffer), a view
// operator becomes a device-to-device copy.
absl::StatusOr<LoweredNode> LowerDeviceNode(const NeutralPlan& plan,
                                            const PlanNode& node,
                                            bool allow_view,
                                            LoweringOptions options = {});

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_OPS_H_
