// Conversion of ONNX protobuf pieces (element types, tensors, value infos,
// Constant nodes) into engine types. Pure functions; thread-safe.
#ifndef COALESCE_ENGINE_ONNX_IMPORT_H_
#define COALESCE_ENGINE_ONNX_IMPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/external_data.h"
#include "engine/graph.h"
#include "engine/tensor_spec.h"
#include "onnx/onnx_pb.h"

namespace coalesce {

// The DataType of an ONNX TensorProto.DataType value: every numeric type
// Triton has (BOOL, UINT8..UINT64, INT8..INT64, FLOAT16, BFLOAT16, FLOAT,
// DOUBLE) and STRING (kBytes). InvalidArgument for the others (COMPLEX*) or
// an unknown value.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type);

// The inverse of DataTypeFromOnnx; TensorProto::UNDEFINED for kInvalid.
int32_t OnnxTypeOf(DataType dtype);

// An initializer's contents: raw_data (little-endian), or the typed field
// ONNX keeps the type in: float_data, double_data, int64_data; int32_data for
// INT32, INT16, INT8, UINT16, UINT8, BOOL, and FLOAT16/BFLOAT16 bit patterns;
// uint64_data for UINT32 and UINT64; string_data for STRING (whose bytes the
// tensor then owns, ConstantTensor::string_bytes); or external data, read
// through `external` (engine/external_data.h): a view of the mapped file
// when its elements are naturally aligned there, else a copy. InvalidArgument
// for an unsupported type, raw_data on a STRING tensor, a value or byte count
// that does not match the shape, or external data without `external`.
absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportTensor(
    const onnx::TensorProto& tensor, const ExternalData* external = nullptr);

// The value of a Constant node (attribute value, value_float(s),
// value_int(s), value_string(s)).
absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportConstantNode(
    const onnx::NodeProto& node, const ExternalData* external = nullptr);

// A graph input or output; symbolic or missing dims become -1.
absl::StatusOr<TensorSpec> ImportValueInfo(const onnx::ValueInfoProto& info);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_ONNX_IMPORT_H_
