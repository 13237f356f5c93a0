// Serialized BYTES tensors as KServe v2 sends them, the form STRING tensors
// take at the executor boundary (engine/executor.h): per element, row-major,
// a 4-byte little-endian length followed by that many bytes. The batching
// layer only needs to know where rows end (SerializedPrefixSize); the engine
// reads and writes the elements (engine/string_io.h). Pure functions;
// thread-safe.
#ifndef COALESCE_ENGINE_SERIALIZED_BYTES_H_
#define COALESCE_ENGINE_SERIALIZED_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace coalesce {

// Bytes of the length before each element.
inline constexpr size_t kSerializedLengthBytes = 4;

// The length stored at `at`. REQUIRES: kSerializedLengthBytes readable there.
uint32_t ReadSerializedLength(const char* at);

// Stores `length` at `at`. REQUIRES: kSerializedLengthBytes writable there.
void WriteSerializedLength(uint32_t length, char* at);

// Bytes taken by the first `count` elements of `data`; nullopt when `data`
// ends before them (a length prefix or an element's bytes cut short).
// REQUIRES: count >= 0.
std::optional<size_t> SerializedPrefixSize(std::string_view data,
                                           int64_t count);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SERIALIZED_BYTES_H_
