#include "tests/conformance/conformance_util.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace coalesce::conformance {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TensorProto raw_data is little-endian");

// Appends the values of a repeated proto field to `out` converted to T.
template <typename T, typename Field>
void AppendAs(const Field& field, std::string& out) {
  out.resize(static_cast<size_t>(field.size()) * sizeof(T));
  T* dst = reinterpret_cast<T*>(out.data());
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

// Fills `bytes` from the typed field the ONNX spec assigns to `dtype`.
void CopyTypedField(const onnx::TensorProto& proto, DataType dtype,
                    std::string& bytes) {
  switch (dtype) {
    case DataType::kFp32:
      return AppendAs<float>(proto.float_data(), bytes);
    case DataType::kFp64:
      return AppendAs<double>(proto.double_data(), bytes);
    case DataType::kInt64:
      return AppendAs<int64_t>(proto.int64_data(), bytes);
    case DataType::kUint64:
      return AppendAs<uint64_t>(proto.uint64_data(), bytes);
    case DataType::kUint32:
      return AppendAs<uint32_t>(proto.uint64_data(), bytes);
    case DataType::kInt32:
      return AppendAs<int32_t>(proto.int32_data(), bytes);
    case DataType::kInt16:
      return AppendAs<int16_t>(proto.int32_data(), bytes);
    case DataType::kInt8:
      return AppendAs<int8_t>(proto.int32_data(), bytes);
    case DataType::kUint16:
    case DataType::kFp16:  // bit patterns, one per int32
    case DataType::kBf16:
      return AppendAs<uint16_t>(proto.int32_data(), bytes);
    case DataType::kUint8:
    case DataType::kBool:
      return AppendAs<uint8_t>(proto.int32_data(), bytes);
    case DataType::kBytes:
    case DataType::kInvalid:
      return;
  }
}

double HalfToDouble(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 0x1f) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

// Element `i` of `t` as a double.
double ElementAsDouble(const HostTensor& t, size_t i) {
  auto at = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  };
  switch (t.dtype) {
    case DataType::kFp32:
      return at(float{});
    case DataType::kFp64:
      return at(double{});
    case DataType::kInt64:
      return static_cast<double>(at(int64_t{}));
    case DataType::kUint64:
      return static_cast<double>(at(uint64_t{}));
    case DataType::kInt32:
      return at(int32_t{});
    case DataType::kUint32:
      return at(uint32_t{});
    case DataType::kInt16:
      return at(int16_t{});
    case DataType::kUint16:
      return at(uint16_t{});
    case DataType::kInt8:
      return at(int8_t{});
    case DataType::kUint8:
    case DataType::kBool:
      return at(uint8_t{});
    case DataType::kFp16:
      return HalfToDouble(at(uint16_t{}));
    case DataType::kBf16:
      return std::bit_cast<float>(static_cast<uint32_t>(at(uint16_t{})) << 16);
    case DataType::kBytes:
    case DataType::kInvalid:
      return NAN;
  }
  return NAN;
}

bool Close(double expected, double actual, const Tolerance& tol) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(actual - expected) <=
         tol.atol + tol.rtol * std::fabs(expected);
}

// Reads "<open>VALUE<close>" starting at `pos`; advances `pos` past it.
bool ReadQuoted(absl::string_view text, absl::string_view open,
                absl::string_view close, size_t& pos, std::string& value) {
  if (text.substr(pos, open.size()) != open) return false;
  const size_t begin = pos + open.size();
  const size_t end = text.find(close, begin);
  if (end == absl::string_view::npos) return false;
  value = std::string(text.substr(begin, end - begin));
  pos = end + close.size();
  return true;
}

void AddUnique(std::vector<std::string>& list, std::string value) {
  for (const std::string& v : list)
    if (v == value) return;
  list.push_back(std::move(value));
}

}  // namespace

DataType DataTypeFromOnnxElemType(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DataType::kFp32;
    case onnx::TensorProto::DOUBLE:
      return DataType::kFp64;
    case onnx::TensorProto::FLOAT16:
      return DataType::kFp16;
    case onnx::TensorProto::BFLOAT16:
      return DataType::kBf16;
    case onnx::TensorProto::INT64:
      return DataType::kInt64;
    case onnx::TensorProto::INT32:
      return DataType::kInt32;
    case onnx::TensorProto::INT16:
      return DataType::kInt16;
    case onnx::TensorProto::INT8:
      return DataType::kInt8;
    case onnx::TensorProto::UINT64:
      return DataType::kUint64;
    case onnx::TensorProto::UINT32:
      return DataType::kUint32;
    case onnx::TensorProto::UINT16:
      return DataType::kUint16;
    case onnx::TensorProto::UINT8:
      return DataType::kUint8;
    case onnx::TensorProto::BOOL:
      return DataType::kBool;
    default:
      return DataType::kInvalid;
  }
}

absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto) {
  const std::string where = absl::StrCat("tensor '", proto.name(), "': ");
  HostTensor tensor;
  tensor.name = proto.name();
  tensor.dtype = DataTypeFromOnnxElemType(proto.data_type());
  if (tensor.dtype == DataType::kInvalid) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "element type ", proto.data_type(),
                     " cannot be read into a dense tensor"));
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return absl::InvalidArgumentError(where + "external data");
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  std::optional<int64_t> count = ElementCount(tensor.shape);
  if (!count)
    return absl::InvalidArgumentError(
        absl::StrCat(where, "invalid dims ", ShapeToString(tensor.shape)));
  const size_t want =
      static_cast<size_t>(*count) * ElementByteSize(tensor.dtype);
  if (proto.has_raw_data()) {
    tensor.bytes = proto.raw_data();
  } else {
    CopyTypedField(proto, tensor.dtype, tensor.bytes);
  }
  if (tensor.bytes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "has ", tensor.bytes.size(), " bytes of data, dims ",
        ShapeToString(tensor.shape), " need ", want));
  }
  return tensor;
}

absl::StatusOr<HostTensor> ReadTensorFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::stringstream contents;
  contents << file.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(contents.str())) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a serialized TensorProto"));
  }
  absl::StatusOr<HostTensor> tensor = TensorFromProto(proto);
  if (!tensor.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "': ", tensor.status().message()));
  }
  return tensor;
}

int32_t OnnxElemTypeFromDataType(DataType dtype) {
  if (dtype == DataType::kInvalid) return onnx::TensorProto::UNDEFINED;
  // onnx.TensorProto.DataType numbers its types 1 (FLOAT) .. 16 (BFLOAT16).
  for (int32_t elem_type = 1; elem_type <= 16; ++elem_type) {
    if (DataTypeFromOnnxElemType(elem_type) == dtype) return elem_type;
  }
  return onnx::TensorProto::UNDEFINED;
}

absl::Status WriteTensorFile(const HostTensor& tensor,
                             const std::string& path) {
  const int32_t elem_type = OnnxElemTypeFromDataType(tensor.dtype);
  const std::optional<int64_t> count = ElementCount(tensor.shape);
  if (elem_type == onnx::TensorProto::UNDEFINED || !count ||
      tensor.bytes.size() !=
          static_cast<size_t>(*count) * ElementByteSize(tensor.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", tensor.name, "': cannot write ",
                     std::string(DataTypeName(tensor.dtype)), " ",
                     ShapeToString(tensor.shape), " with ", tensor.bytes.size(),
                     " bytes as a TensorProto"));
  }
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  proto.set_data_type(elem_type);
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !proto.SerializeToOstream(&file) || !file.flush()) {
    return absl::InternalError(absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

absl::Status AllClose(const HostTensor& expected, const HostTensor& actual,
                      const Tolerance& tolerance) {
  if (expected.dtype != actual.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", std::string(DataTypeName(actual.dtype)),
                     ", expected ", std::string(DataTypeName(expected.dtype))));
  }
  if (expected.shape != actual.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(actual.shape), ", expected ",
                     ShapeToString(expected.shape)));
  }
  const size_t count =
      static_cast<size_t>(ElementCount(expected.shape).value_or(0));
  if (expected.bytes.size() != actual.bytes.size() ||
      actual.bytes.size() != count * ElementByteSize(actual.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        actual.bytes.size(), " bytes, expected ", expected.bytes.size()));
  }
  size_t mismatches = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < count; ++i) {
    const double e = ElementAsDouble(expected, i),
                 a = ElementAsDouble(actual, i);
    if (Close(e, a, tolerance)) continue;
    ++mismatches;
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(e);
    const double excess =
        std::isfinite(a - e) ? std::fabs(a - e) - allowed : INFINITY;
    if (excess > worst_excess || mismatches == 1)
      worst = i, worst_excess = excess;
  }
  if (mismatches == 0) return absl::OkStatus();
  const double e = ElementAsDouble(expected, worst),
               a = ElementAsDouble(actual, worst);
  return absl::InvalidArgumentError(absl::StrCat(
      mismatches, " of ", count, " elements differ (rtol ", tolerance.rtol,
      ", atol ", tolerance.atol, "); worst at flat index ", worst, ": got ", a,
      ", expected ", e, ", |diff| ", std::fabs(a - e)));
}

UnsupportedReason ParseLoadError(const absl::Status& status) {
  UnsupportedReason reason;
  const absl::string_view message = status.message();
  constexpr absl::string_view kOps = "unsupported operators: ";
  if (size_t pos = message.find(kOps); pos != absl::string_view::npos) {
    while ((pos = message.find("(op '", pos)) != absl::string_view::npos) {
      std::string op, domain;
      if (!ReadQuoted(message, "(op '", "')", pos, op)) break;
      if (ReadQuoted(message, " in domain '", "'", pos, domain))
        op = absl::StrCat(domain, "/", op);
      AddUnique(reason.ops, std::move(op));
    }
  }
  constexpr absl::string_view kType = "unsupported element type ";
  if (size_t pos = message.find(kType); pos != absl::string_view::npos) {
    const size_t begin = pos + kType.size();
    const size_t end = message.find_first_of(" ,;", begin);
    AddUnique(reason.datatypes,
              absl::StrCat("datatype ", message.substr(begin, end - begin)));
  }
  if (absl::StrContains(message, "' is not a tensor"))
    AddUnique(reason.datatypes, "non-tensor value (sequence, map or optional)");
  return reason;
}

}  // namespace coalesce::conformance
