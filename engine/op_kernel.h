// OpKernel: the CPU implementation of one ONNX node, created once per node when
// a Model loads (attributes are parsed and validated then) and shared,
// immutable, by every plan and executor instance of that Model. Thread-safe:
// Infer and Run are const and keep no state between calls.
//
// Optional inputs that the node leaves empty arrive with dtype kInvalid.
// STRING (kBytes) tensors hold StringRef handles (engine/string_ref.h), 16
// bytes per element (StorageByteSize); an op that makes new strings puts
// their bytes in the output's `strings` store.
#ifndef COALESCE_ENGINE_OP_KERNEL_H_
#define COALESCE_ENGINE_OP_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/data_type.h"
#include "engine/neutral_plan.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/shape.h"

namespace onnx {
class NodeProto;
}  // namespace onnx

namespace coalesce {

class PreparedKernel;
class StringStore;

// TensorInfo (engine/neutral_plan.h): what shape inference knows about a
// tensor, including its value when known at plan time.

// A tensor bound to memory during a run. `shape` points into the plan.
struct ConstTensorView {
  DataType dtype = DataType::kInvalid;
  const Shape* shape = nullptr;
  const char* data = nullptr;
  bool present() const { return dtype != DataType::kInvalid; }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data);
  }
};

struct TensorView {
  DataType dtype = DataType::kInvalid;
  const Shape* shape = nullptr;
  char* data = nullptr;
  // Where new string bytes for this output go (engine/string_store.h), for
  // ops that make strings; null when the caller gives none (the op then
  // fails instead of making strings).
  StringStore* strings = nullptr;
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;

  // Sets the dtype and shape of every output from the inputs' concrete shapes.
  // `outputs` arrives sized to the node's output count. InvalidArgument when
  // the inputs do not fit the operator.
  virtual absl::Status Infer(absl::Span<const TensorInfo> inputs,
                             absl::Span<TensorInfo> outputs) const = 0;

  // Computes the outputs. REQUIRES: shapes are those Infer produced; output
  // memory does not overlap input memory, except that with
  // CopiesInputBytes() output 0 may be input 0 itself.
  virtual absl::Status Run(absl::Span<const ConstTensorView> inputs,
                           absl::Span<const TensorView> outputs) const = 0;

  // True when output 0 is input 0's bytes unchanged, under another shape
  // (Reshape and its kin): the plan may then give output 0 input 0's memory
  // where input 0 dies at this node, and Run, seeing one address, copies
  // nothing.
  virtual bool CopiesInputBytes() const { return false; }

  // True when Run reads its inputs' shapes but never their data (Shape). The
  // plan then computes the outputs once while planning, as it does for any
  // node whose inputs are all known at plan time, and passes inputs with null
  // data.
  virtual bool ReadsOnlyInputShapes() const { return false; }

  // Called once per execution plan, after Infer, with the inputs' and
  // outputs' TensorInfos (constant inputs carry their data). A kernel that
  // gains from per-shape work returns a PreparedKernel, which the plan then
  // runs instead of Run; the default, null, means Run is used.
  virtual absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> inputs,
      absl::Span<const TensorInfo> outputs) const;
};

// The node an OpKernel is built for: its proto, with attribute accessors
// that check attribute types, its attributes as a plan carries them, and,
// when its operator has a schema (engine/schema/op_schema.h), the resolved
// attributes, which the kernel reads instead of parsing the proto.
class OpNode {
 public:
  // Reads the node's attributes and resolves them through its operator's
  // schema, if it has one. Errors as OpSchema::Resolve's.
  static absl::StatusOr<OpNode> Resolve(const onnx::NodeProto& proto,
                                        int64_t opset);

  const onnx::NodeProto& proto() const { return proto_; }
  int64_t opset() const { return opset_; }
  const NodeAttributes& attributes() const { return attributes_; }
  // Null when the operator has no schema.
  const OpSchema* schema() const { return schema_; }
  const std::shared_ptr<const OpAttributes>& resolved() const {
    return resolved_;
  }
  // The resolved attributes as the family's struct; null when the node has
  // none of that type.
  template <typename Attrs>
  const Attrs* resolved_as() const {
    return ResolvedAs<Attrs>(resolved_.get());
  }
  int num_inputs() const;
  int num_outputs() const;

  bool HasAttribute(const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name,
                                 int64_t default_value) const;
  absl::StatusOr<float> GetFloat(const std::string& name,
                                 float default_value) const;
  // Empty when absent.
  absl::StatusOr<std::vector<int64_t>> GetInts(const std::string& name) const;
  absl::StatusOr<std::string> GetString(const std::string& name,
                                        const std::string& default_value) const;

 private:
  OpNode(const onnx::NodeProto& proto, int64_t opset)
      : proto_(proto), opset_(opset) {}

  const onnx::NodeProto& proto_;
  int64_t opset_;
  NodeAttributes attributes_;
  const OpSchema* schema_ = nullptr;
  std::shared_ptr<const OpAttributes> resolved_;
};

// The base of CPU kernels whose operator's schema infers types and shapes:
// Infer is the schema's, so the CPU and the planner cannot disagree.
class SchemaKernel : public OpKernel {
 public:
  // REQUIRES: node.schema() is non-null and infers().
  explicit SchemaKernel(const OpNode& node)
      : schema_(*node.schema()), resolved_(node.resolved()) {}

  absl::Status Infer(absl::Span<const TensorInfo> inputs,
                     absl::Span<TensorInfo> outputs) const override {
    return schema_.Infer(*resolved_, inputs, outputs);
  }

 private:
  const OpSchema& schema_;
  std::shared_ptr<const OpAttributes> resolved_;
};

// Common checks for Infer implementations: engine/schema/infer_util.h.
// The run-time views of `in` as TensorInfos (absent inputs stay absent) and
// data pointers, for helpers that serve both Infer and Run (with ReadInts).
void SplitViews(absl::Span<const ConstTensorView> in,
                std::vector<TensorInfo>* infos, std::vector<const char*>* data);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OP_KERNEL_H_
