// Checks every operator's type and shape inference shares (op schemas,
// engine/schema/op_schema.h, and the CPU kernels not migrated to one yet).
// Device-neutral: no ONNX protobuf, no kernels. Pure functions.
#ifndef COALESCE_ENGINE_SCHEMA_INFER_UTIL_H_
#define COALESCE_ENGINE_SCHEMA_INFER_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/data_type.h"
#include "engine/neutral_plan.h"
#include "engine/shape.h"

namespace coalesce {

// InvalidArgument unless inputs[i] is present and of dtype `type`.
absl::Status ExpectInputType(absl::Span<const TensorInfo> inputs, int i,
                             DataType type);
// Maps `axis` in [-rank, rank) (or [-rank, rank] when `inclusive`) to
// [0, rank) (or [0, rank]); negative axes count from the end.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      bool inclusive = false);
// The values of an int64 or int32 input of rank 0 or 1 (`what` names it in
// errors). From `data` when given (Run), else from info.constant_data (Infer);
// InvalidArgument when neither is available or the type is wrong.
absl::StatusOr<std::vector<int64_t>> ReadInts(const TensorInfo& info,
                                              const char* data,
                                              const char* what);
// Product of shape[begin, end).
int64_t DimProduct(const Shape& shape, size_t begin, size_t end);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_INFER_UTIL_H_
