// OnnxModelBuilder: builds small ONNX ModelProtos in C++ for tests and
// benchmarks, plus RunModelOnce, which plans and executes a Model on given
// float inputs without an executor. Test-only; not thread-safe.
#ifndef COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_
#define COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/shape.h"
#include "onnx/onnx_pb.h"

namespace coalesce::testing {

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 17);

  // A -1 dim becomes a symbolic dim_param "N".
  OnnxModelBuilder& Input(const std::string& name, const Shape& dims,
                          int32_t elem_type = onnx::TensorProto::FLOAT);
  OnnxModelBuilder& Output(const std::string& name, const Shape& dims = {},
                           int32_t elem_type = onnx::TensorProto::FLOAT);
  OnnxModelBuilder& FloatInitializer(const std::string& name, const Shape& dims,
                                     const std::vector<float>& values);
  OnnxModelBuilder& Int64Initializer(const std::string& name, const Shape& dims,
                                     const std::vector<int64_t>& values);
  // A STRING initializer (string_data).
  OnnxModelBuilder& StringInitializer(const std::string& name,
                                      const Shape& dims,
                                      const std::vector<std::string>& values);
  // An initializer of any fixed-size type from raw little-endian bytes.
  OnnxModelBuilder& RawInitializer(const std::string& name, int32_t elem_type,
                                   const Shape& dims, const void* data,
                                   size_t byte_size);
  // Adds a node (named `name`, or "<op_type>_<index>") and returns it so the
  // caller can add attributes.
  onnx::NodeProto& Node(const std::string& op_type,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name = "");

  onnx::ModelProto& proto() { return proto_; }
  std::string Serialize() const;
  absl::StatusOr<std::shared_ptr<const Model>> Load() const;

 private:
  onnx::ModelProto proto_;
};

void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t value);
void SetFloatAttr(onnx::NodeProto& node, const std::string& name, float value);
void SetStringAttr(onnx::NodeProto& node, const std::string& name,
                   const std::string& value);
void SetIntsAttr(onnx::NodeProto& node, const std::string& name,
                 const std::vector<int64_t>& values);

// Deterministic pseudo-random floats in [-1, 1).
std::vector<float> RandomFloats(size_t count, uint32_t seed);

// Plans `model` for the inputs' shapes and runs it once; FP32 inputs/outputs.
struct HostTensor {
  Shape shape;
  std::vector<float> data;
};
absl::StatusOr<std::vector<HostTensor>> RunModelOnce(
    std::shared_ptr<const Model> model, const std::vector<HostTensor>& inputs,
    const PlanOptions& options = {});

// A tensor of any fixed-size element type, as raw bytes.
struct TypedTensor {
  DataType dtype = DataType::kInvalid;
  Shape shape;
  std::vector<char> bytes;

  template <typename T>
  std::vector<T> values() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

template <typename T>
TypedTensor MakeTyped(DataType dtype, Shape shape, const std::vector<T>& v) {
  TypedTensor t{dtype, std::move(shape),
                std::vector<char>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}
// bool has no contiguous std::vector; values are 0 or 1 bytes.
inline TypedTensor MakeBool(Shape shape, const std::vector<uint8_t>& v) {
  return MakeTyped(DataType::kBool, std::move(shape), v);
}

// A STRING tensor as the engine holds it: StringRef handles
// (engine/string_ref.h) pointing into `v`, which must outlive the tensor.
TypedTensor MakeStrings(Shape shape, const std::vector<std::string>& v);
// The strings a STRING TypedTensor's handles point at.
std::vector<std::string> StringsOf(const TypedTensor& t);

// KServe v2's serialized BYTES form of `v` (engine/string_io.h), and back
// (empty on malformed data).
std::string SerializeBytes(const std::vector<std::string>& v);
std::vector<std::string> DeserializeBytes(const char* data, size_t size);

// Loads the builder's model and runs it once on a single all-zero float
// input of `shape`: OK, or the status of the step that failed (load, plan or
// run). For tests of what a model or its shapes are rejected for.
absl::Status LoadAndRunOnZeros(const OnnxModelBuilder& builder,
                               const Shape& shape);

// RunModelOnce for inputs and outputs of any fixed-size type; REQUIRES: each
// input's dtype is the model input's.
absl::StatusOr<std::vector<TypedTensor>> RunModelTyped(
    std::shared_ptr<const Model> model, const std::vector<TypedTensor>& inputs);

// The MLP benchmark model: [B,in] -> Gemm(hidden) -> Relu -> Gemm(hidden) ->
// Relu -> Gemm(out) -> Softmax, with weights transposed (transB=1) as PyTorch
// exports them.
std::string BuildMlpModel(int64_t in_features, int64_t hidden,
                          int64_t out_features, uint32_t seed);

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_
