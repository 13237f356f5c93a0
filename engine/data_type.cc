#include "engine/data_type.h"

#include <array>
#include <utility>

namespace coalesce {
namespace {

constexpr std::array<std::pair<DataType, std::string_view>, 14> kNames = {{
    {DataType::kBool, "BOOL"},
    {DataType::kUint8, "UINT8"},
    {DataType::kUint16, "UINT16"},
    {DataType::kUint32, "UINT32"},
    {DataType::kUint64, "UINT64"},
    {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},
    {DataType::kInt32, "INT32"},
    {DataType::kInt64, "INT64"},
    {DataType::kFp16, "FP16"},
    {DataType::kFp32, "FP32"},
    {DataType::kFp64, "FP64"},
    {DataType::kBytes, "BYTES"},
    {DataType::kBf16, "BF16"},
}};

}  // namespace

std::string_view DataTypeName(DataType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return "INVALID";
}

DataType DataTypeFromName(std::string_view name) {
  for (const auto& [t, n] : kNames) {
    if (n == name) return t;
  }
  return DataType::kInvalid;
}

}  // namespace coalesce
