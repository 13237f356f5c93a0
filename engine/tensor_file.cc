#include "engine/tensor_file.h"

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"

namespace coalesce {

absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto) {
  const std::string where = absl::StrCat("tensor '", proto.name(), "': ");
  if (proto.data_type() == onnx::TensorProto::STRING) {
    return absl::InvalidArgumentError(
        where + "STRING cannot be read into a dense tensor");
  }
  absl::StatusOr<std::unique_ptr<ConstantTensor>> imported =
      ImportTensor(proto);
  if (!imported.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, imported.status().message()));
  const ConstantTensor& constant = **imported;
  return HostTensor{proto.name(), constant.dtype, constant.shape,
                    std::string(constant.bytes(), constant.byte_size)};
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

absl::Status WriteTensorFile(const HostTensor& tensor,
                             const std::string& path) {
  const std::optional<int64_t> count = ElementCount(tensor.shape);
  if (tensor.dtype == DataType::kInvalid || tensor.dtype == DataType::kBytes ||
      !count ||
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
  proto.set_data_type(OnnxTypeOf(tensor.dtype));
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !proto.SerializeToOstream(&file) || !file.flush()) {
    return absl::InternalError(absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace coalesce
