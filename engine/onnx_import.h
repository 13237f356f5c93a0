// Conversion of ONNX protobuf pieces (element types, tensors, value infos,
// Constant nodes) into engine types. Pure functions; thread-safe.
#ifndef COALESCE_ENGINE_ONNX_IMPORT_H_
#define COALESCE_ENGINE_ONNX_IMPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/tensor_spec.h"
#include "onnx/onnx_pb.h"

namespace coalesce {

// The DataType of an ONNX TensorProto.DataType value. InvalidArgument for a
// type the engine does not compute with (FLOAT, INT64, INT32 and BOOL are
// supported) or an unknown value.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type);

// An initializer's contents (raw_data or the typed repeated fields).
// InvalidArgument for external data, an unsupported type or a size mismatch.
absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportTensor(
    const onnx::TensorProto& tensor);

// The value of a Constant node (attribute value, value_float(s), value_int(s)).
absl::StatusOr<std::unique_ptr<ConstantTensor>> ImportConstantNode(
    const onnx::NodeProto& node);

// A graph input or output; symbolic or missing dims become -1.
absl::StatusOr<TensorSpec> ImportValueInfo(const onnx::ValueInfoProto& info);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_ONNX_IMPORT_H_
