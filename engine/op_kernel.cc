#include "engine/op_kernel.h"

#include "absl/strings/str_cat.h"
#include "engine/prepared_kernel.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node,
                                          const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

absl::Status WrongType(const std::string& name, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' must be of type ", want));
}

}  // namespace

int OpNode::num_inputs() const { return proto_.input_size(); }
int OpNode::num_outputs() const { return proto_.output_size(); }

bool OpNode::HasAttribute(const std::string& name) const {
  return FindAttribute(proto_, name) != nullptr;
}

absl::StatusOr<int64_t> OpNode::GetInt(const std::string& name,
                                       int64_t default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::INT) return WrongType(name, "INT");
  return attr->i();
}

absl::StatusOr<float> OpNode::GetFloat(const std::string& name,
                                       float default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::FLOAT)
    return WrongType(name, "FLOAT");
  return attr->f();
}

absl::StatusOr<std::vector<int64_t>> OpNode::GetInts(
    const std::string& name) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return std::vector<int64_t>{};
  if (attr->type() != onnx::AttributeProto::INTS)
    return WrongType(name, "INTS");
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

absl::StatusOr<std::string> OpNode::GetString(
    const std::string& name, const std::string& default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::STRING)
    return WrongType(name, "STRING");
  return attr->s();
}

absl::StatusOr<std::unique_ptr<PreparedKernel>> OpKernel::Prepare(
    absl::Span<const TensorInfo> inputs,
    absl::Span<const TensorInfo> outputs) const {
  return nullptr;
}

absl::Status ExpectInputType(absl::Span<const TensorInfo> inputs, int i,
                             DataType type) {
  if (i >= static_cast<int>(inputs.size()) || !inputs[i].present()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " is required"));
  }
  if (inputs[i].dtype != type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", i, " has type ", std::string(DataTypeName(inputs[i].dtype)),
        ", expected ", std::string(DataTypeName(type))));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      bool inclusive) {
  const int64_t limit = inclusive ? rank + 1 : rank;
  if (axis < -rank || axis >= limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

void SplitViews(absl::Span<const ConstTensorView> in,
                std::vector<TensorInfo>* infos,
                std::vector<const char*>* data) {
  for (const ConstTensorView& t : in) {
    infos->push_back({t.dtype, t.present() ? *t.shape : Shape{}, nullptr});
    data->push_back(t.data);
  }
}

absl::StatusOr<std::vector<int64_t>> ReadInts(const TensorInfo& info,
                                              const char* data,
                                              const char* what) {
  if (!info.present())
    return absl::InvalidArgumentError(absl::StrCat(what, " is required"));
  if (info.dtype != DataType::kInt64 && info.dtype != DataType::kInt32) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be int64 or int32, not ",
                     std::string(DataTypeName(info.dtype))));
  }
  if (info.shape.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a scalar or 1-D"));
  }
  if (data == nullptr) data = info.constant_data;
  if (data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        " must be known when planning (an initializer, a Constant, or "
        "computed from shapes)"));
  }
  const int64_t n = info.shape.empty() ? 1 : info.shape[0];
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) {
    values[i] = info.dtype == DataType::kInt64
                    ? reinterpret_cast<const int64_t*>(data)[i]
                    : reinterpret_cast<const int32_t*>(data)[i];
  }
  return values;
}

int64_t DimProduct(const Shape& shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) product *= shape[i];
  return product;
}

}  // namespace coalesce
