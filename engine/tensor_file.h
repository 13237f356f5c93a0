// Tensor files: one tensor per file as a serialized onnx.TensorProto, the
// format of the ONNX backend tests' input_N.pb/output_N.pb and of
// onnx.numpy_helper. coalesce-onnx-run reads its inputs and writes its outputs
// this way, and the conformance runner reads the backend tests' data.
//
// Reading goes through the engine's own initializer import
// (engine/onnx_import.h: raw_data or the typed field ONNX assigns the type),
// so a tensor file and an initializer are read by one piece of code.
// Pure functions of their arguments (and the file); thread-safe.
#ifndef COALESCE_ENGINE_TENSOR_FILE_H_
#define COALESCE_ENGINE_TENSOR_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/shape.h"
#include "onnx/onnx_pb.h"

namespace coalesce {

// A dense tensor in host memory: row-major, little-endian, `bytes` holds
// exactly ElementCount(shape) * ElementByteSize(dtype) bytes.
struct HostTensor {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;
  std::string bytes;
};

// `proto`'s values as a HostTensor. InvalidArgument naming the tensor for a
// type a dense tensor cannot hold (STRING, complex, 8-bit floats), external
// data, or a value count that does not match the dims.
absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto);

// Parses the file at `path` as a serialized TensorProto. NotFound when the
// file cannot be opened, InvalidArgument (naming the file) when it does not
// parse or convert.
absl::StatusOr<HostTensor> ReadTensorFile(const std::string& path);

// Writes `tensor` to `path` as a serialized TensorProto (name, dims,
// raw_data), which ReadTensorFile and onnx.numpy_helper read back.
// InvalidArgument for a dtype ONNX cannot hold densely (kBytes, kInvalid) or a
// byte count that does not match the shape; Internal when the file cannot be
// written.
absl::Status WriteTensorFile(const HostTensor& tensor, const std::string& path);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_TENSOR_FILE_H_
