// Shared by the device registry's files (device_ops.cc and its operator
// families): a node being lowered, with its plan, shapes and attributes,
// and small helpers. Internal to engine/device/.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_OPS_INTERNAL_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_OPS_INTERNAL_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/device/device_kernels.h"
#include "engine/device/device_ops.h"
#include "engine/neutral_plan.h"
#include "engine/schema/activation_schema.h"
#include "engine/schema/op_schema.h"

namespace coalesce {
namespace device_ops {

// One node being lowered: its plan, shapes and attributes.
class NodeView {
 public:
  NodeView(const NeutralPlan& plan, const PlanNode& node,
           LoweringOptions options = {})
      : plan_(plan), node_(node), options_(options) {}

  const PlanNode& node() const { return node_; }
  const NodeAttributes& attrs() const { return *node_.attributes; }
  // The attributes the operator's schema resolved (engine/schema/), as the
  // family's struct; Internal when the node has none of that type.
  template <typename Attrs>
  absl::StatusOr<const Attrs*> resolved() const {
    const Attrs* attrs = ResolvedAs<Attrs>(node_.resolved);
    if (attrs == nullptr) {
      return absl::InternalError(
          absl::StrCat(NodeLabel(node_), " has no resolved attributes"));
    }
    return attrs;
  }
  int64_t opset() const { return plan_.opset; }
  const LoweringOptions& options() const { return options_; }
  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  bool has_input(int i) const {
    return i < num_inputs() && node_.inputs[i] >= 0;
  }
  int in_id(int i) const { return node_.inputs[i]; }
  int out_id(int i) const { return node_.outputs[i]; }
  const PlannedValue& in(int i) const { return plan_.values[in_id(i)]; }
  const PlannedValue& out(int i) const { return plan_.values[out_id(i)]; }
  const Shape& in_shape(int i) const { return in(i).info.shape; }
  const Shape& out_shape(int i) const { return out(i).info.shape; }
  // How a value is stored on the device (LoweringOptions::storage).
  DeviceFloat stored(int id) const {
    return options_.storage != nullptr ? (*options_.storage)[id]
                                       : DeviceFloat::kFloat;
  }
  DeviceFloat in_type(int i) const { return stored(in_id(i)); }
  DeviceFloat out_type(int i) const { return stored(out_id(i)); }
  // Bytes of one element of input i as stored (its dtype's, or 2 for
  // 16-bit storage).
  size_t in_element_bytes(int i) const {
    return in_type(i) != DeviceFloat::kFloat
               ? sizeof(Half)
               : ElementByteSize(in(i).info.dtype);
  }

  // Unimplemented unless the listed inputs and output 0 are float32.
  absl::Status RequireFloat(std::initializer_list<int> inputs) const {
    for (int i : inputs) {
      if (has_input(i) && in(i).info.dtype != DataType::kFp32) {
        return absl::UnimplementedError(absl::StrCat(
            "input ", i, " is ", std::string(DataTypeName(in(i).info.dtype)),
            "; the GPU computes float32 only"));
      }
    }
    if (out(0).info.dtype != DataType::kFp32) {
      return absl::UnimplementedError(absl::StrCat(
          "output is ", std::string(DataTypeName(out(0).info.dtype)),
          "; the GPU computes float32 only"));
    }
    return absl::OkStatus();
  }

  // A scalar float input known at plan time (Clip's bounds).
  absl::StatusOr<float> ConstantScalar(int i, float default_value) const {
    if (!has_input(i)) return default_value;
    const TensorInfo& info = in(i).info;
    if (info.constant_data == nullptr || info.dtype != DataType::kFp32 ||
        in(i).byte_size != sizeof(float)) {
      return absl::UnimplementedError(absl::StrCat(
          "input ", i, " must be a float32 scalar known at load time"));
    }
    return *reinterpret_cast<const float*>(info.constant_data);
  }

 private:
  const NeutralPlan& plan_;
  const PlanNode& node_;
  const LoweringOptions options_;
};

inline float* F(const StepContext& c, int id) {
  return static_cast<float*>(c.addresses[id]);
}

// Value `id` as a float tensor stored as `type`, read or written.
inline FloatIn In(const StepContext& c, int id, DeviceFloat type) {
  return FloatIn(c.addresses[id], type);
}
inline FloatOut Out(const StepContext& c, int id, DeviceFloat type) {
  return FloatOut(c.addresses[id], type);
}

inline int64_t Product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

inline int64_t Count(const Shape& shape) {
  return Product(shape, 0, shape.size());
}

// What the copying kernels move (Transpose, Expand, Where, the indexing
// and movement families): elements of 1, 2, 4 or 8 bytes, rank up to 8.
inline absl::Status CheckElementCopy(size_t element_bytes, size_t rank) {
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 &&
      element_bytes != 8) {
    return absl::UnimplementedError("elements of this type");
  }
  if (rank > 8) return absl::UnimplementedError("rank above 8");
  return absl::OkStatus();
}

// A 16-bit operand (LoweringOptions::activations' type) of a product in
// FP16 or BF16 mode: a constant converted once per program
// (LoweredNode::converted), a value stored in that type read in place, or
// a float32 value that a ToHalf step converts into scratch before each
// product.
struct HalfOperand {
  int converted = -1;  // index in LoweredNode::converted
  int scratch = -1;    // index in LoweredNode::scratch_bytes
  int value = -1;      // value id stored in the 16-bit type
  const Half* Address(const StepContext& c) const {
    if (converted >= 0) return static_cast<const Half*>(c.converted[converted]);
    if (value >= 0) return static_cast<const Half*>(c.addresses[value]);
    return static_cast<const Half*>(c.scratch[scratch]);
  }
};

// Makes input `input` of the node (float32) a 16-bit operand of the next
// step appended to `lowered`: a constant is converted once (its float32
// form is never uploaded; `oihw` as in ConvertedConstant); a value stored
// in the 16-bit type is read as it is; anything else gets a scratch buffer,
// a ToHalf step appended now, and a place in `lowered.reads`.
HalfOperand AddHalfOperand(const NodeView& v, int input, LoweredNode& lowered,
                           const int64_t* oihw = nullptr);

// Input `input` (a float32 constant) converted to `type`, and to KRSC when
// `oihw` (its dims) is given, once per program: its index in
// lowered.converted.
int AddConvertedConstant(const NodeView& v, int input, DeviceFloat type,
                         const int64_t* oihw, LoweredNode& lowered);

// Scratch for a 16-bit result of `count` elements (a convolution's output
// before it returns to float32).
int AddHalfScratch(int64_t count, LoweredNode& lowered);

// The optimizer's fused activation (FusedConv, FusedGemm, FusedMatMul) as
// the device runs it.
ActivationSpec DeviceFusedActivation(const FusedActivationAttr& attr);

// The CNN family (device_ops_cnn.cc): Conv, FusedConv, MaxPool,
// AveragePool, GlobalAveragePool, GlobalMaxPool, LRN, BatchNormalization.
absl::StatusOr<LoweredNode> LowerConv(const NodeView& v);
absl::StatusOr<LoweredNode> LowerPool(const NodeView& v);
absl::StatusOr<LoweredNode> LowerLrn(const NodeView& v);
absl::StatusOr<LoweredNode> LowerBatchNorm(const NodeView& v);

// ReduceMean and ReduceMax over trailing axes (device_ops_reduce.cc).
absl::StatusOr<LoweredNode> LowerReduce(const NodeView& v);

// The typed elementwise family (device_ops_typed.cc): comparisons, logic,
// IsNaN/IsInf, Mod, Max/Min, and Add/Sub/Mul/Div/Neg/Abs on integers;
// Where; Cast; QuantizeLinear and DequantizeLinear.
absl::StatusOr<LoweredNode> LowerTyped(const NodeView& v);
absl::StatusOr<LoweredNode> LowerWhere(const NodeView& v);
absl::StatusOr<LoweredNode> LowerCast(const NodeView& v);
absl::StatusOr<LoweredNode> LowerQuantize(const NodeView& v);

// The indexing family (device_ops_indexing.cc).
absl::StatusOr<LoweredNode> LowerGatherNd(const NodeView& v);
absl::StatusOr<LoweredNode> LowerGatherElements(const NodeView& v);
absl::StatusOr<LoweredNode> LowerCumSum(const NodeView& v);
absl::StatusOr<LoweredNode> LowerArgMax(const NodeView& v);

// Slice, Split, Pad and Resize (device_ops_movement.cc).
absl::StatusOr<LoweredNode> LowerSlice(const NodeView& v);
absl::StatusOr<LoweredNode> LowerSplit(const NodeView& v);
absl::StatusOr<LoweredNode> LowerPad(const NodeView& v);
absl::StatusOr<LoweredNode> LowerResize(const NodeView& v);

}  // namespace device_ops
}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_OPS_INTERNAL_H_
