#include "engine/string_io.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/serialized_bytes.h"

namespace coalesce {

absl::Status ParseSerializedStrings(const char* data, size_t byte_size,
                                    int64_t count, StringRef* out) {
  size_t at = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (byte_size - at < kSerializedLengthBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "serialized BYTES hold ", i, " elements, the shape needs ", count));
    }
    const uint32_t length = ReadSerializedLength(data + at);
    at += kSerializedLengthBytes;
    if (byte_size - at < length) {
      return absl::InvalidArgumentError(
          absl::StrCat("element ", i, " of the serialized BYTES has length ",
                       length, ", beyond the ", byte_size, "-byte buffer"));
    }
    out[i] = StringRef{data + at, length};
    at += length;
  }
  if (at != byte_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("serialized BYTES have ", byte_size - at,
                     " bytes left over after ", count, " elements"));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> SerializedStringsSize(const StringRef* strings,
                                             int64_t count) {
  size_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (strings[i].size > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("element ", i, " is ", strings[i].size,
                       " bytes long; BYTES elements hold at most 2^32 - 1"));
    }
    total += kSerializedLengthBytes + strings[i].size;
  }
  return total;
}

void SerializeStrings(const StringRef* strings, int64_t count, char* out) {
  for (int64_t i = 0; i < count; ++i) {
    WriteSerializedLength(static_cast<uint32_t>(strings[i].size), out);
    out += kSerializedLengthBytes;
    if (strings[i].size > 0) std::memcpy(out, strings[i].data, strings[i].size);
    out += strings[i].size;
  }
}

}  // namespace coalesce
