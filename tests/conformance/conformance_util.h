// Pieces of the ONNX conformance runner that are worth testing on their own:
// reading a serialized onnx.TensorProto into host memory (and writing one, for
// tools/onnx_run.cc), comparing a result with an expected tensor the way the
// ONNX backend tests do (numpy allclose), and telling an "unsupported" load
// error from a real failure.
//
// Everything here is a pure function of its arguments and thread-safe.
#ifndef COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
#define COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/data_type.h"
#include "engine/shape.h"
#include "onnx/onnx_pb.h"

namespace coalesce::conformance {

// A dense tensor in host memory: row-major, little-endian, `bytes` holds
// exactly ElementCount(shape) * ElementByteSize(dtype) bytes.
struct HostTensor {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;
  std::string bytes;
};

// The DataType of an onnx.TensorProto.DataType value; kInvalid for types a
// HostTensor cannot hold (STRING, complex, 4-bit and 8-bit floats, unknown).
DataType DataTypeFromOnnxElemType(int32_t elem_type);

// Copies `proto`'s values, from raw_data or from the typed field the ONNX spec
// assigns to its data type (float_data, double_data, int64_data, uint64_data,
// int32_data for int32/int16/int8/uint16/uint8/bool/fp16/bf16).
// InvalidArgument when the type is not representable, the data is external,
// or the value count does not match the dims.
absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto);

// Parses the file at `path` as a serialized TensorProto. NotFound when the
// file cannot be opened, InvalidArgument when it does not parse or convert.
absl::StatusOr<HostTensor> ReadTensorFile(const std::string& path);

// The onnx.TensorProto.DataType value of `dtype` (inverse of
// DataTypeFromOnnxElemType); 0 (UNDEFINED) for kInvalid and kBytes.
int32_t OnnxElemTypeFromDataType(DataType dtype);

// Writes `tensor` to `path` as a serialized TensorProto (name, dims, raw_data),
// which ReadTensorFile and onnx.numpy_helper read back. InvalidArgument for a
// dtype ONNX cannot hold densely (kBytes, kInvalid) or a byte count that does
// not match the shape; Internal when the file cannot be written.
absl::Status WriteTensorFile(const HostTensor& tensor, const std::string& path);

struct Tolerance {
  double rtol = 1e-3;  // the ONNX backend runner's defaults
  double atol = 1e-7;
};

// OK when `actual` has the dtype and shape of `expected` and every element
// satisfies |actual - expected| <= atol + rtol * |expected| (numpy allclose,
// `expected` being numpy's `b`). NaN equals NaN and an infinity equals the
// same infinity (np.testing.assert_allclose, which the ONNX backend uses).
// Integer and bool elements go through the same formula as doubles.
// Otherwise InvalidArgument describing the mismatch count, the worst element
// and its values.
absl::Status AllClose(const HostTensor& expected, const HostTensor& actual,
                      const Tolerance& tolerance);

// Why Model::Load rejected a model, when the reason is a missing feature of
// the engine rather than a bug: the op types or data types it named.
struct UnsupportedReason {
  // "Cos", "Erf", "com.microsoft/FusedConv": every distinct operator named,
  // in first-seen order.
  std::vector<std::string> ops;
  // "datatype STRING", "non-tensor value" (a sequence, map or optional).
  std::vector<std::string> datatypes;
};

// Reads Model::LoadFromFile's error message. An empty result (no ops and no
// datatypes) means the error is not about support: the case failed.
UnsupportedReason ParseLoadError(const absl::Status& status);

}  // namespace coalesce::conformance

#endif  // COALESCE_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
