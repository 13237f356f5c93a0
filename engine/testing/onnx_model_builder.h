// OnnxModelBuilder: builds small ONNX ModelProtos in C++ for tests and
// benchmarks, plus RunModelOnce, which plans and executes a Model on given
// float inputs without an executor. Test-only; not thread-safe.
#ifndef COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_
#define COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
    std::shared_ptr<const Model> model, const std::vector<HostTensor>& inputs);

// The MLP benchmark model: [B,in] -> Gemm(hidden) -> Relu -> Gemm(hidden) ->
// Relu -> Gemm(out) -> Softmax, with weights transposed (transB=1) as PyTorch
// exports them.
std::string BuildMlpModel(int64_t in_features, int64_t hidden,
                          int64_t out_features, uint32_t seed);

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_TESTING_ONNX_MODEL_BUILDER_H_
