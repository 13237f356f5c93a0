#include "engine/schema/infer_util.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coalesce {

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
