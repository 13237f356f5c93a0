#include "batching/serialized_bytes.h"

namespace coalesce {

std::optional<size_t> SerializedPrefixSize(std::string_view data,
                                           int64_t count) {
  size_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (data.size() - offset < 4) return std::nullopt;
    const auto* p =
        reinterpret_cast<const unsigned char*>(data.data() + offset);
    const size_t length =
        static_cast<size_t>(p[0]) | static_cast<size_t>(p[1]) << 8 |
        static_cast<size_t>(p[2]) << 16 | static_cast<size_t>(p[3]) << 24;
    offset += 4;
    if (data.size() - offset < length) return std::nullopt;
    offset += length;
  }
  return offset;
}

}  // namespace coalesce
