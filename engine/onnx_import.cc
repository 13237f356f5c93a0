#include "engine/onnx_import.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/string_ref.h"

namespace coalesce {
namespace {

// The ONNX TensorProto.DataType of each engine type, in one table both
// directions read.
constexpr std::pair<int32_t, DataType> kOnnxTypes[] = {
    {onnx::TensorProto::FLOAT, DataType::kFp32},
    {onnx::TensorProto::UINT8, DataType::kUint8},
    {onnx::TensorProto::INT8, DataType::kInt8},
    {onnx::TensorProto::UINT16, DataType::kUint16},
    {onnx::TensorProto::INT16, DataType::kInt16},
    {onnx::TensorProto::INT32, DataType::kInt32},
    {onnx::TensorProto::INT64, DataType::kInt64},
    {onnx::TensorProto::STRING, DataType::kBytes},
    {onnx::TensorProto::BOOL, DataType::kBool},
    {onnx::TensorProto::FLOAT16, DataType::kFp16},
    {onnx::TensorProto::DOUBLE, DataType::kFp64},
    {onnx::TensorProto::UINT32, DataType::kUint32},
    {onnx::TensorProto::UINT64, DataType::kUint64},
    {onnx::TensorProto::BFLOAT16, DataType::kBf16},
};

absl::StatusOr<std::unique_ptr<ConstantTensor>> MakeConstant(DataType dtype,
                                                             Shape shape) {
  auto tensor = std::make_unique<ConstantTensor>();
  std::optional<int64_t> count = ElementCount(shape);
  std::optional<size_t> bytes =
      count ? CheckedStorageBytes(*count, dtype) : std::nullopt;
  if (!bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid tensor shape ", ShapeToString(shape),
                     ": negative, overflowing or larger than 1 TiB"));
  }
  tensor->dtype = dtype;
  tensor->shape = std::move(shape);
  tensor->byte_size = *bytes;
  if (absl::Status s = tensor->storage.Reserve(tensor->byte_size); !s.ok())
    return s;
  return tensor;
}

// Copies the repeated field into the tensor as type T (bit patterns for
// float16/bfloat16, which ONNX keeps in int32_data).
template <typename T, typename Field>
absl::Status CopyTyped(const Field& field, ConstantTensor& tensor) {
  const size_t count = tensor.byte_size / sizeof(T);
  if (static_cast<size_t>(field.size()) != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor has ", field.size(), " values, shape ",
                     ShapeToString(tensor.shape), " needs ", count));
  }
  T* out = reinterpret_cast<T*>(tensor.storage.data());
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(field.Get(i));
  return absl::OkStatus();
}

// string_data: the bytes go into one buffer the tensor owns, the handles
// point into it.
absl::Status CopyStrings(const onnx::TensorProto& proto,
                         ConstantTensor& tensor) {
  const size_t count = tensor.byte_size / sizeof(StringRef);
  if (static_cast<size_t>(proto.string_data_size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor has ", proto.string_data_size(), " strings, shape ",
        ShapeToString(tensor.shape), " needs ", count));
  }
  size_t total = 0;
  for (const std::string& s : proto.string_data()) total += s.size();
  tensor.string_bytes = std::make_unique<char[]>(std::max<size_t>(total, 1));
  StringRef* out = reinterpret_cast<StringRef*>(tensor.storage.data());
  char* next = tensor.string_bytes.get();
  for (size_t i = 0; i < count; ++i) {
    const std::string& s = proto.string_data(static_cast<int>(i));
    if (!s.empty()) std::memcpy(next, s.data(), s.size());
    out[i] = StringRef{next, s.size()};
    next += s.size();
  }
  return absl::OkStatus();
}

// At least the number of elements `proto` stores: its typed values, or one
// per byte of raw_data (no element takes less than a byte).
int64_t StoredElementBound(const onnx::TensorProto& proto) {
  if (proto.has_raw_data())
    return static_cast<int64_t>(proto.raw_data().size());
  return int64_t{proto.float_data_size()} + proto.double_data_size() +
         proto.int32_data_size() + proto.int64_data_size() +
         proto.uint64_data_size() + proto.string_data_size();
}

absl::Status FillTensor(const onnx::TensorProto& proto,
                        ConstantTensor& tensor) {
  if (tensor.dtype == DataType::kBytes) {
    if (proto.has_raw_data())
      return absl::InvalidArgumentError("a STRING tensor cannot use raw_data");
    return CopyStrings(proto, tensor);
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != tensor.byte_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "raw_data has ", proto.raw_data().size(), " bytes, shape ",
          ShapeToString(tensor.shape), " needs ", tensor.byte_size));
    }
    std::memcpy(tensor.storage.data(), proto.raw_data().data(),
                tensor.byte_size);
    return absl::OkStatus();
  }
  switch (tensor.dtype) {
    case DataType::kFp32:
      return CopyTyped<float>(proto.float_data(), tensor);
    case DataType::kFp64:
      return CopyTyped<double>(proto.double_data(), tensor);
    case DataType::kInt64:
      return CopyTyped<int64_t>(proto.int64_data(), tensor);
    case DataType::kUint32:
      return CopyTyped<uint32_t>(proto.uint64_data(), tensor);
    case DataType::kUint64:
      return CopyTyped<uint64_t>(proto.uint64_data(), tensor);
    case DataType::kInt32:
      return CopyTyped<int32_t>(proto.int32_data(), tensor);
    case DataType::kBool:  // the narrow types all live in int32_data
      return CopyTyped<bool>(proto.int32_data(), tensor);
    case DataType::kInt8:
      return CopyTyped<int8_t>(proto.int32_data(), tensor);
    case DataType::kUint8:
      return CopyTyped<uint8_t>(proto.int32_data(), tensor);
    case DataType::kInt16:
      return CopyTyped<int16_t>(proto.int32_data(), tensor);
    case DataType::kUint16:
    case DataType::kFp16:
    case DataType::kBf16:
      return CopyTyped<uint16_t>(proto.int32_data(), tensor);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read a tensor of type ",
                       std::string(DataTypeName(tensor.dtype))));
  }
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportListAttribute(
    const onnx::AttributeProto& attr) {
  absl::StatusOr<std::unique_ptr<ConstantTensor>> t;
  const bool scalar = attr.name() == "value_float" ||
                      attr.name() == "value_int" ||
                      attr.name() == "value_string";
  if (attr.name() == "value_float" || attr.name() == "value_floats") {
    t = MakeConstant(DataType::kFp32,
                     scalar ? Shape{} : Shape{attr.floats_size()});
    if (!t.ok()) return t.status();
    if (scalar)
      *reinterpret_cast<float*>((*t)->storage.data()) = attr.f();
    else
      std::copy(attr.floats().begin(), attr.floats().end(),
                reinterpret_cast<float*>((*t)->storage.data()));
    return t;
  }
  if (attr.name() == "value_int" || attr.name() == "value_ints") {
    t = MakeConstant(DataType::kInt64,
                     scalar ? Shape{} : Shape{attr.ints_size()});
    if (!t.ok()) return t.status();
    if (scalar)
      *reinterpret_cast<int64_t*>((*t)->storage.data()) = attr.i();
    else
      std::copy(attr.ints().begin(), attr.ints().end(),
                reinterpret_cast<int64_t*>((*t)->storage.data()));
    return t;
  }
  // value_string(s): read through a TensorProto of string_data.
  onnx::TensorProto strings;
  strings.set_data_type(onnx::TensorProto::STRING);
  if (scalar) {
    strings.add_string_data(attr.s());
  } else {
    strings.add_dims(attr.strings_size());
    *strings.mutable_string_data() = attr.strings();
  }
  return ImportTensor(strings);
}

// A tensor whose bytes live in an external file: viewed in place when
// its elements are aligned, else copied.
absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportExternal(
    const onnx::TensorProto& proto, DataType dtype, Shape shape,
    const ExternalData* external) {
  const std::string where = absl::StrCat("tensor '", proto.name(), "': ");
  if (external == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     "external data needs the model's folder (load the model "
                     "from its file)"));
  }
  std::optional<int64_t> count = ElementCount(shape);
  std::optional<size_t> byte_size =
      count ? CheckedStorageBytes(*count, dtype) : std::nullopt;
  if (!byte_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "invalid tensor shape ", ShapeToString(shape),
                     ": negative, overflowing or larger than 1 TiB"));
  }
  absl::StatusOr<ExternalBytes> bytes = external->Read(proto, *byte_size);
  if (!bytes.ok()) return bytes.status();
  // Kernels read elements as their C++ type: a view needs the element's
  // natural alignment (the torch exporter aligns tensors to 16 bytes).
  const bool aligned =
      reinterpret_cast<uintptr_t>(bytes->data) % ElementByteSize(dtype) == 0;
  if (bytes->size > 0 && aligned) {
    auto tensor = std::make_unique<ConstantTensor>();
    tensor->dtype = dtype;
    tensor->shape = std::move(shape);
    tensor->byte_size = bytes->size;
    tensor->mapped = bytes->data;
    tensor->mapping = std::move(bytes->keep_alive);
    return tensor;
  }
  auto tensor = MakeConstant(dtype, std::move(shape));
  if (!tensor.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, tensor.status().message()));
  if (bytes->size > 0)
    std::memcpy((*tensor)->storage.data(), bytes->data, bytes->size);
  return tensor;
}

}  // namespace

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type) {
  for (const auto& [onnx_type, dtype] : kOnnxTypes) {
    if (onnx_type == elem_type) return dtype;
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

int32_t OnnxTypeOf(DataType dtype) {
  for (const auto& [onnx_type, type] : kOnnxTypes) {
    if (type == dtype) return onnx_type;
  }
  return onnx::TensorProto::UNDEFINED;
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportTensor(
    const onnx::TensorProto& proto, const ExternalData* external) {
  const std::string where = absl::StrCat("tensor '", proto.name(), "': ");
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(proto.data_type());
  if (!dtype.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, dtype.status().message()));
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return ImportExternal(proto, *dtype, std::move(shape), external);
  }
  // Refused before anything is allocated for it: a shape the stored values
  // cannot fill (FillTensor checks the exact count afterwards).
  if (std::optional<int64_t> count = ElementCount(shape);
      count && *count > StoredElementBound(proto)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "shape ", ShapeToString(shape), " needs ", *count,
                     " elements; the tensor stores fewer"));
  }
  auto tensor = MakeConstant(*dtype, std::move(shape));
  if (!tensor.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, tensor.status().message()));
  if (absl::Status s = FillTensor(proto, **tensor); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, s.message()));
  }
  return tensor;
}

absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportConstantNode(
    const onnx::NodeProto& node, const ExternalData* external) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == "value") return ImportTensor(attr.t(), external);
    if (attr.name() == "value_float" || attr.name() == "value_floats" ||
        attr.name() == "value_int" || attr.name() == "value_ints" ||
        attr.name() == "value_string" || attr.name() == "value_strings") {
      return ImportListAttribute(attr);
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
