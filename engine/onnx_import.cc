#include "engine/onnx_import.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

absl::StatusOr<std::unique_ptr<ConstantTensor>> MakeConstant(DataType dtype,
                                                             Shape shape) {
  auto tensor = std::make_unique<ConstantTensor>();
  std::optional<int64_t> count = ElementCount(shape);
  if (!count) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid tensor shape ", ShapeToString(shape)));
  }
  tensor->dtype = dtype;
  tensor->shape = std::move(shape);
  tensor->byte_size = static_cast<size_t>(*count) * ElementByteSize(dtype);
  if (absl::Status s = tensor->data.Reserve(tensor->byte_size); !s.ok())
    return s;
  return tensor;
}

// Copies `count` values of the repeated field into the tensor as type T.
template <typename T, typename Field>
absl::Status CopyTyped(const Field& field, ConstantTensor& tensor) {
  const size_t count = tensor.byte_size / sizeof(T);
  if (static_cast<size_t>(field.size()) != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor has ", field.size(), " values, shape ",
                     ShapeToString(tensor.shape), " needs ", count));
  }
  T* out = reinterpret_cast<T*>(tensor.data.data());
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(field.Get(i));
  return absl::OkStatus();
}

absl::Status FillTensor(const onnx::TensorProto& proto,
                        ConstantTensor& tensor) {
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != tensor.byte_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "raw_data has ", proto.raw_data().size(), " bytes, shape ",
          ShapeToString(tensor.shape), " needs ", tensor.byte_size));
    }
    std::memcpy(tensor.data.data(), proto.raw_data().data(), tensor.byte_size);
    return absl::OkStatus();
  }
  switch (tensor.dtype) {
    case DataType::kFp32:
      return CopyTyped<float>(proto.float_data(), tensor);
    case DataType::kInt32:
      return CopyTyped<int32_t>(proto.int32_data(), tensor);
    case DataType::kBool:  // ONNX keeps bools in int32_data
      return CopyTyped<bool>(proto.int32_data(), tensor);
    default:
      return CopyTyped<int64_t>(proto.int64_data(), tensor);
  }
}

}  // namespace

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DataType::kFp32;
    case onnx::TensorProto::INT64:
      return DataType::kInt64;
    case onnx::TensorProto::INT32:
      return DataType::kInt32;
    case onnx::TensorProto::BOOL:
      return DataType::kBool;
    default:
      break;
  }
  if (onnx::TensorProto::DataType_IsValid(elem_type) && elem_type != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported element type ",
                     onnx::TensorProto::DataType_Name(
                         static_cast<onnx::TensorProto::DataType>(elem_type))));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown element type ", elem_type));
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportTensor(
    const onnx::TensorProto& proto) {
  const std::string where = absl::StrCat("tensor '", proto.name(), "': ");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::InvalidArgumentError(where + "external data is not supported");
  }
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(proto.data_type());
  if (!dtype.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, dtype.status().message()));
  auto tensor =
      MakeConstant(*dtype, Shape(proto.dims().begin(), proto.dims().end()));
  if (!tensor.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, tensor.status().message()));
  if (absl::Status s = FillTensor(proto, **tensor); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
  }
  return tensor;
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportConstantNode(
    const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == "value") return ImportTensor(attr.t());
    absl::StatusOr<std::unique_ptr<ConstantTensor>> t;
    if (attr.name() == "value_float" || attr.name() == "value_floats") {
      const bool scalar = attr.name() == "value_float";
      t = MakeConstant(DataType::kFp32,
                       scalar ? Shape{} : Shape{attr.floats_size()});
      if (!t.ok()) return t.status();
      if (scalar)
        *reinterpret_cast<float*>((*t)->data.data()) = attr.f();
      else
        std::copy(attr.floats().begin(), attr.floats().end(),
                  reinterpret_cast<float*>((*t)->data.data()));
      return t;
    }
    if (attr.name() == "value_int" || attr.name() == "value_ints") {
      const bool scalar = attr.name() == "value_int";
      t = MakeConstant(DataType::kInt64,
                       scalar ? Shape{} : Shape{attr.ints_size()});
      if (!t.ok()) return t.status();
      if (scalar)
        *reinterpret_cast<int64_t*>((*t)->data.data()) = attr.i();
      else
        std::copy(attr.ints().begin(), attr.ints().end(),
                  reinterpret_cast<int64_t*>((*t)->data.data()));
      return t;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "Constant node '", node.name(), "' has no supported value attribute"));
}

absl::StatusOr<TensorSpec> ImportValueInfo(const onnx::ValueInfoProto& info) {
  TensorSpec spec;
  spec.name = info.name();
  if (!info.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", info.name(), "' is not a tensor"));
  }
  const onnx::TypeProto::Tensor& type = info.type().tensor_type();
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(type.elem_type());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", info.name(), "': ", dtype.status().message()));
  }
  spec.dtype = *dtype;
  for (const auto& dim : type.shape().dim()) {
    spec.dims.push_back(
        dim.has_dim_value() && dim.dim_value() >= 0 ? dim.dim_value() : -1);
  }
  return spec;
}

}  // namespace coalesce
