// Serialized BYTES tensors as KServe v2 sends them: per element, row-major, a
// 4-byte little-endian length followed by that many bytes. The batching layer
// never looks inside the elements; it only needs to know where rows end.
// Pure functions; thread-safe.
#ifndef COALESCE_BATCHING_SERIALIZED_BYTES_H_
#define COALESCE_BATCHING_SERIALIZED_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace coalesce {

// Bytes taken by the first `count` elements of `data`; nullopt when `data`
// ends before them (a length prefix or an element's bytes cut short).
// REQUIRES: count >= 0.
std::optional<size_t> SerializedPrefixSize(std::string_view data,
                                           int64_t count);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_SERIALIZED_BYTES_H_
