#include "engine/serialized_bytes.h"

namespace coalesce {

uint32_t ReadSerializedLength(const char* at) {
  const auto* b = reinterpret_cast<const unsigned char*>(at);
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
         static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

void WriteSerializedLength(uint32_t length, char* at) {
  for (size_t i = 0; i < kSerializedLengthBytes; ++i)
    at[i] = static_cast<char>((length >> (8 * i)) & 0xff);
}

std::optional<size_t> SerializedPrefixSize(std::string_view data,
                                           int64_t count) {
  size_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (data.size() - offset < kSerializedLengthBytes) return std::nullopt;
    const size_t length = ReadSerializedLength(data.data() + offset);
    offset += kSerializedLengthBytes;
    if (data.size() - offset < length) return std::nullopt;
    offset += length;
  }
  return offset;
}

}  // namespace coalesce
