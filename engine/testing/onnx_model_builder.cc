#include "engine/testing/onnx_model_builder.h"

#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/aligned_buffer.h"
#include "engine/execution_plan.h"
#include "engine/string_io.h"
#include "engine/string_ref.h"

namespace coalesce::testing {
namespace {

void SetType(onnx::ValueInfoProto* info, const std::string& name,
             const Shape& dims, int32_t elem_type) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
}

onnx::AttributeProto* AddAttr(onnx::NodeProto& node, const std::string& name,
                              onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(type);
  return attr;
}

}  // namespace

OnnxModelBuilder::OnnxModelBuilder(int64_t opset) {
  proto_.set_ir_version(8);
  proto_.set_producer_name("coalesce-test");
  auto* op = proto_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  proto_.mutable_graph()->set_name("test");
}

OnnxModelBuilder& OnnxModelBuilder::Input(const std::string& name,
                                          const Shape& dims,
                                          int32_t elem_type) {
  SetType(proto_.mutable_graph()->add_input(), name, dims, elem_type);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::Output(const std::string& name,
                                           const Shape& dims,
                                           int32_t elem_type) {
  SetType(proto_.mutable_graph()->add_output(), name, dims, elem_type);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::FloatInitializer(
    const std::string& name, const Shape& dims,
    const std::vector<float>& values) {
  onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                              values.size() * sizeof(float)));
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::Int64Initializer(
    const std::string& name, const Shape& dims,
    const std::vector<int64_t>& values) {
  onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::StringInitializer(
    const std::string& name, const Shape& dims,
    const std::vector<std::string>& values) {
  onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::STRING);
  for (int64_t d : dims) t->add_dims(d);
  for (const std::string& v : values) t->add_string_data(v);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::RawInitializer(const std::string& name,
                                                   int32_t elem_type,
                                                   const Shape& dims,
                                                   const void* data,
                                                   size_t byte_size) {
  onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(static_cast<const char*>(data), byte_size));
  return *this;
}

onnx::NodeProto& OnnxModelBuilder::Node(const std::string& op_type,
                                        const std::vector<std::string>& inputs,
                                        const std::vector<std::string>& outputs,
                                        const std::string& name) {
  onnx::NodeProto* node = proto_.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(
      name.empty() ? absl::StrCat(op_type, "_", proto_.graph().node_size() - 1)
                   : name);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  return *node;
}

std::string OnnxModelBuilder::Serialize() const {
  return proto_.SerializeAsString();
}

absl::StatusOr<std::shared_ptr<const Model>> OnnxModelBuilder::Load() const {
  return Model::LoadFromBytes(Serialize());
}

void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  AddAttr(node, name, onnx::AttributeProto::INT)->set_i(value);
}

void SetStringAttr(onnx::NodeProto& node, const std::string& name,
                   const std::string& value) {
  AddAttr(node, name, onnx::AttributeProto::STRING)->set_s(value);
}
void SetFloatAttr(onnx::NodeProto& node, const std::string& name, float value) {
  AddAttr(node, name, onnx::AttributeProto::FLOAT)->set_f(value);
}

void SetIntsAttr(onnx::NodeProto& node, const std::string& name,
                 const std::vector<int64_t>& values) {
  auto* attr = AddAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

std::vector<float> RandomFloats(size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

absl::StatusOr<std::vector<HostTensor>> RunModelOnce(
    std::shared_ptr<const Model> model, const std::vector<HostTensor>& inputs,
    const PlanOptions& options) {
  std::vector<Shape> shapes;
  for (const HostTensor& t : inputs) shapes.push_back(t.shape);
  auto plan = ExecutionPlan::Build(model, shapes, options);
  if (!plan.ok()) return plan.status();
  std::vector<const char*> in;
  for (const HostTensor& t : inputs)
    in.push_back(reinterpret_cast<const char*>(t.data.data()));
  std::vector<HostTensor> outputs((*plan)->num_outputs());
  std::vector<char*> out;
  for (int i = 0; i < (*plan)->num_outputs(); ++i) {
    outputs[i].shape = (*plan)->output_shape(i);
    outputs[i].data.resize((*plan)->output_byte_size(i) / sizeof(float) + 1);
    out.push_back(reinterpret_cast<char*>(outputs[i].data.data()));
  }
  AlignedBuffer arena;
  if (absl::Status s = arena.Reserve((*plan)->arena_bytes()); !s.ok()) return s;
  if (absl::Status s = (*plan)->Execute(in, out, arena.data()); !s.ok())
    return s;
  for (int i = 0; i < (*plan)->num_outputs(); ++i) {
    outputs[i].data.resize((*plan)->output_byte_size(i) / sizeof(float));
  }
  return outputs;
}

TypedTensor MakeStrings(Shape shape, const std::vector<std::string>& v) {
  std::vector<StringRef> refs;
  for (const std::string& s : v) refs.push_back({s.data(), s.size()});
  return MakeTyped(DataType::kBytes, std::move(shape), refs);
}

std::vector<std::string> StringsOf(const TypedTensor& t) {
  std::vector<std::string> out;
  for (const StringRef& r : t.values<StringRef>()) out.emplace_back(r.view());
  return out;
}

std::string SerializeBytes(const std::vector<std::string>& v) {
  std::vector<StringRef> refs;
  for (const std::string& s : v) refs.push_back({s.data(), s.size()});
  const int64_t count = static_cast<int64_t>(refs.size());
  std::string out(*SerializedStringsSize(refs.data(), count), '\0');
  SerializeStrings(refs.data(), count, out.data());
  return out;
}

std::vector<std::string> DeserializeBytes(const char* data, size_t size) {
  // At most one element per 4 bytes; count them first.
  int64_t count = 0;
  for (size_t at = 0; at + 4 <= size; ++count) {
    uint32_t length;
    std::memcpy(&length, data + at, 4);  // little-endian hosts only
    at += 4 + static_cast<size_t>(length);
  }
  std::vector<StringRef> refs(count);
  if (!ParseSerializedStrings(data, size, count, refs.data()).ok()) return {};
  std::vector<std::string> out;
  for (const StringRef& r : refs) out.emplace_back(r.view());
  return out;
}

absl::Status LoadAndRunOnZeros(const OnnxModelBuilder& builder,
                               const Shape& shape) {
  auto model = builder.Load();
  if (!model.ok()) return model.status();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return RunModelOnce(*model, {HostTensor{shape, std::vector<float>(count)}})
      .status();
}

absl::StatusOr<std::vector<TypedTensor>> RunModelTyped(
    std::shared_ptr<const Model> model,
    const std::vector<TypedTensor>& inputs) {
  std::vector<Shape> shapes;
  for (const TypedTensor& t : inputs) shapes.push_back(t.shape);
  auto plan = ExecutionPlan::Build(model, shapes);
  if (!plan.ok()) return plan.status();
  std::vector<const char*> in;
  for (const TypedTensor& t : inputs) in.push_back(t.bytes.data());
  std::vector<TypedTensor> outputs((*plan)->num_outputs());
  std::vector<char*> out;
  for (int i = 0; i < (*plan)->num_outputs(); ++i) {
    const PlannedValue& v = (*plan)->values()[model->graph().outputs[i]];
    outputs[i].dtype = v.info.dtype;
    outputs[i].shape = (*plan)->output_shape(i);
    outputs[i].bytes.resize((*plan)->output_byte_size(i) + 8);
    out.push_back(outputs[i].bytes.data());
  }
  AlignedBuffer arena;
  if (absl::Status s = arena.Reserve((*plan)->arena_bytes()); !s.ok()) return s;
  if (absl::Status s = (*plan)->Execute(in, out, arena.data()); !s.ok())
    return s;
  for (int i = 0; i < (*plan)->num_outputs(); ++i)
    outputs[i].bytes.resize((*plan)->output_byte_size(i));
  return outputs;
}

std::string BuildMlpModel(int64_t in_features, int64_t hidden,
                          int64_t out_features, uint32_t seed) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("input", {-1, in_features}).Output("probs", {-1, out_features});
  const int64_t widths[] = {in_features, hidden, hidden, out_features};
  std::string x = "input";
  for (int layer = 0; layer < 3; ++layer) {
    const std::string w = absl::StrCat("w", layer),
                      bias = absl::StrCat("b", layer);
    const float scale = 1.0f / std::sqrt(static_cast<float>(widths[layer]));
    std::vector<float> weights =
        RandomFloats(widths[layer + 1] * widths[layer], seed + layer);
    for (float& v : weights) v *= scale;
    b.FloatInitializer(w, {widths[layer + 1], widths[layer]}, weights);
    b.FloatInitializer(bias, {widths[layer + 1]},
                       RandomFloats(widths[layer + 1], seed + 10 + layer));
    const std::string y = absl::StrCat("gemm", layer);
    SetIntAttr(b.Node("Gemm", {x, w, bias}, {y}), "transB", 1);
    x = y;
    if (layer < 2) {
      b.Node("Relu", {y}, {absl::StrCat("relu", layer)});
      x = absl::StrCat("relu", layer);
    }
  }
  SetIntAttr(b.Node("Softmax", {x}, {"probs"}), "axis", -1);
  return b.Serialize();
}

}  // namespace coalesce::testing
