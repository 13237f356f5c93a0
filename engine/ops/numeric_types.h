// The C++ element type behind each numeric DataType, for ops that dispatch on
// a tensor's dtype: VisitNumericType calls a generic lambda with a value of
// that type, and CastTypeOf gives the kernels' Cast type. FP16 and BF16 are
// kernels::Float16 and kernels::BFloat16 (bit patterns, kernels/cpu/half.h);
// BOOL is bool (one byte). STRING is not numeric. Header-only, stateless.
#ifndef COALESCE_ENGINE_OPS_NUMERIC_TYPES_H_
#define COALESCE_ENGINE_OPS_NUMERIC_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/data_type.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/half.h"

namespace coalesce {

// Returns fn(T{}) for the C++ type T of `type`; InvalidArgument naming the
// type when it is not numeric. `fn` returns absl::Status.
template <typename Fn>
absl::Status VisitNumericType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kBool:
      return fn(bool{});
    case DataType::kUint8:
      return fn(uint8_t{});
    case DataType::kUint16:
      return fn(uint16_t{});
    case DataType::kUint32:
      return fn(uint32_t{});
    case DataType::kUint64:
      return fn(uint64_t{});
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kInt16:
      return fn(int16_t{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kFp16:
      return fn(kernels::Float16{});
    case DataType::kFp32:
      return fn(float{});
    case DataType::kFp64:
      return fn(double{});
    case DataType::kBf16:
      return fn(kernels::BFloat16{});
    case DataType::kBytes:
    case DataType::kInvalid:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "type ", std::string(DataTypeName(type)), " is not numeric"));
}

// True for the types plain arithmetic kernels take (kernels/cpu/
// elementwise.h): FP32, FP64 and the 8- to 64-bit integers; not BOOL,
// FP16, BF16 or STRING.
inline bool IsArithmeticType(DataType type) {
  switch (type) {
    case DataType::kFp32:
    case DataType::kFp64:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

// The kernels' Cast type of a numeric DataType; nullopt for STRING.
inline std::optional<kernels::CastType> CastTypeOf(DataType type) {
  using kernels::CastType;
  switch (type) {
    case DataType::kBool:
      return CastType::kBool;
    case DataType::kUint8:
      return CastType::kUint8;
    case DataType::kUint16:
      return CastType::kUint16;
    case DataType::kUint32:
      return CastType::kUint32;
    case DataType::kUint64:
      return CastType::kUint64;
    case DataType::kInt8:
      return CastType::kInt8;
    case DataType::kInt16:
      return CastType::kInt16;
    case DataType::kInt32:
      return CastType::kInt32;
    case DataType::kInt64:
      return CastType::kInt64;
    case DataType::kFp16:
      return CastType::kFloat16;
    case DataType::kFp32:
      return CastType::kFloat32;
    case DataType::kFp64:
      return CastType::kFloat64;
    case DataType::kBf16:
      return CastType::kBFloat16;
    case DataType::kBytes:
    case DataType::kInvalid:
      break;
  }
  return std::nullopt;
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_NUMERIC_TYPES_H_
