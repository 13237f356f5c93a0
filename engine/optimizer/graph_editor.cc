#include "engine/optimizer/graph_editor.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"

namespace coalesce {

GraphEditor::GraphEditor(onnx::GraphProto* graph, const ExternalData* external)
    : graph_(graph), external_(external) {
  Refresh();
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> GraphEditor::ReadTensor(
    const onnx::TensorProto& tensor) const {
  return ImportTensor(tensor, external_);
}

void GraphEditor::Refresh() {
  producers_.clear();
  uses_.clear();
  last_consumer_.clear();
  outputs_.clear();
  initializers_.clear();
  for (const onnx::TensorProto& t : graph_->initializer()) {
    initializers_[t.name()] = &t;
    names_.insert(t.name());
  }
  for (onnx::NodeProto& node : *graph_->mutable_node()) {
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      producers_[out] = &node;
      names_.insert(out);
    }
    for (const std::string& in : node.input()) {
      if (in.empty()) continue;
      ++uses_[in];
      last_consumer_[in] = &node;
    }
  }
  for (const onnx::ValueInfoProto& out : graph_->output()) {
    outputs_.insert(out.name());
    ++uses_[out.name()];
  }
  for (const onnx::ValueInfoProto& in : graph_->input())
    names_.insert(in.name());
}

onnx::NodeProto* GraphEditor::Producer(const std::string& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? nullptr : it->second;
}

int GraphEditor::UseCount(const std::string& value) const {
  auto it = uses_.find(value);
  return it == uses_.end() ? 0 : it->second;
}

bool GraphEditor::IsGraphOutput(const std::string& value) const {
  return outputs_.contains(value);
}

bool GraphEditor::HasSingleNodeUse(const std::string& value) const {
  return UseCount(value) == 1 && !IsGraphOutput(value);
}

onnx::NodeProto* GraphEditor::SoleConsumer(const std::string& value) const {
  if (!HasSingleNodeUse(value)) return nullptr;
  auto it = last_consumer_.find(value);
  return it == last_consumer_.end() ? nullptr : it->second;
}

const onnx::TensorProto* GraphEditor::Initializer(
    const std::string& value) const {
  auto it = initializers_.find(value);
  return it == initializers_.end() ? nullptr : it->second;
}

namespace {

// The values of initializer `t` when it has `type`, as T.
template <typename T>
std::optional<std::vector<T>> ValuesOf(const GraphEditor& editor,
                                       const onnx::TensorProto* t, int type,
                                       Shape* dims) {
  if (t == nullptr || t->data_type() != type) return std::nullopt;
  absl::StatusOr<std::unique_ptr<ConstantTensor>> c = editor.ReadTensor(*t);
  if (!c.ok()) return std::nullopt;
  std::vector<T> values((*c)->byte_size / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), (*c)->bytes(), (*c)->byte_size);
  if (dims != nullptr) *dims = (*c)->shape;
  return values;
}

}  // namespace

std::optional<std::vector<float>> GraphEditor::FloatValues(
    const std::string& value, Shape* dims) const {
  return ValuesOf<float>(*this, Initializer(value), onnx::TensorProto::FLOAT,
                         dims);
}

std::optional<std::vector<int64_t>> GraphEditor::Int64Values(
    const std::string& value) const {
  return ValuesOf<int64_t>(*this, Initializer(value), onnx::TensorProto::INT64,
                           nullptr);
}

std::optional<float> GraphEditor::FloatScalar(const std::string& value) const {
  std::optional<std::vector<float>> v = FloatValues(value);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

std::string GraphEditor::UniqueName(const std::string& base) {
  std::string name = base;
  while (names_.contains(name)) name = absl::StrCat(base, "_", next_id_++);
  names_.insert(name);
  return name;
}

std::string GraphEditor::AddFloatInitializer(const std::string& base,
                                             const Shape& dims,
                                             const std::vector<float>& values) {
  return AddRawInitializer(base, onnx::TensorProto::FLOAT, dims, values.data(),
                           values.size() * sizeof(float));
}

std::string GraphEditor::AddInt64Initializer(
    const std::string& base, const std::vector<int64_t>& values) {
  return AddRawInitializer(base, onnx::TensorProto::INT64,
                           {static_cast<int64_t>(values.size())}, values.data(),
                           values.size() * sizeof(int64_t));
}

std::string GraphEditor::AddRawInitializer(const std::string& base, int type,
                                           const Shape& dims, const void* data,
                                           size_t bytes) {
  onnx::TensorProto t;
  t.set_name(UniqueName(base));
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(data, bytes);
  std::string name = t.name();
  AddInitializer(std::move(t));
  return name;
}

void GraphEditor::AddInitializer(onnx::TensorProto tensor) {
  names_.insert(tensor.name());
  *graph_->add_initializer() = std::move(tensor);
  // The repeated field may have moved its elements; rebuild the pointers.
  initializers_.clear();
  for (const onnx::TensorProto& t : graph_->initializer())
    initializers_[t.name()] = &t;
}

void GraphEditor::Remove(onnx::NodeProto* node) { removed_.insert(node); }

void GraphEditor::Commit() {
  if (!removed_.empty()) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (onnx::NodeProto& node : *graph_->mutable_node())
      if (!removed_.contains(&node)) *kept.Add() = std::move(node);
    graph_->mutable_node()->Swap(&kept);
    removed_.clear();
  }
  Refresh();
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node,
                                     const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void SetStringAttr(onnx::NodeProto& node, const std::string& name,
                   const std::string& value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void SetFloatAttr(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

bool IsDefaultDomain(const onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

bool IsMove(const onnx::NodeProto& node) {
  static const char* const kMoves[] = {"Reshape",   "Transpose", "Squeeze",
                                       "Unsqueeze", "Flatten",   "Identity"};
  if (!IsDefaultDomain(node)) return false;
  for (const char* op : kMoves)
    if (node.op_type() == op) return true;
  return false;
}

}  // namespace coalesce
