// DataType: the element types a tensor can hold, with their KServe v2 wire
// names.
//
// The enumerator values equal Triton's ModelConfig DataType enum (TYPE_BOOL = 1
// ... TYPE_BF16 = 14), so a config proto value converts with a static_cast.
// Everything here is a pure function and thread-safe.
#ifndef COALESCE_ENGINE_DATA_TYPE_H_
#define COALESCE_ENGINE_DATA_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace coalesce {

enum class DataType : uint8_t {
  kInvalid = 0,
  kBool = 1,
  kUint8 = 2,
  kUint16 = 3,
  kUint32 = 4,
  kUint64 = 5,
  kInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kFp16 = 10,
  kFp32 = 11,
  kFp64 = 12,
  kBytes = 13,  // "BYTES" on the wire, TYPE_STRING in a config.
  kBf16 = 14,
};

// Bytes per element; 0 for kBytes (variable length) and kInvalid.
constexpr size_t ElementByteSize(DataType type) {
  switch (type) {
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kInt8:
      return 1;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFp16:
    case DataType::kBf16:
      return 2;
    case DataType::kUint32:
    case DataType::kInt32:
    case DataType::kFp32:
      return 4;
    case DataType::kUint64:
    case DataType::kInt64:
    case DataType::kFp64:
      return 8;
    case DataType::kBytes:
    case DataType::kInvalid:
      return 0;
  }
  return 0;
}

// The KServe v2 datatype string ("FP32", "BYTES", ...); "INVALID" for kInvalid.
std::string_view DataTypeName(DataType type);

// Inverse of DataTypeName; kInvalid for an unknown name.
DataType DataTypeFromName(std::string_view name);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DATA_TYPE_H_
