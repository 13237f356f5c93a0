// Conversion between STRING tensors as the engine holds them (StringRef
// handles, engine/string_ref.h) and KServe v2's serialized BYTES form, the
// form at the executor boundary (engine/executor.h): per element, in
// row-major order, a 4-byte little-endian length followed by that many
// bytes. Pure functions; thread-safe.
#ifndef COALESCE_ENGINE_STRING_IO_H_
#define COALESCE_ENGINE_STRING_IO_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/string_ref.h"

namespace coalesce {

// Points out[0..count) at the elements of the serialized `data` (the handles
// point into `data`). InvalidArgument when the buffer does not hold exactly
// `count` elements: a length or its bytes run past the end, fewer elements,
// or bytes left over.
absl::Status ParseSerializedStrings(const char* data, size_t byte_size,
                                    int64_t count, StringRef* out);

// Bytes the serialized form of strings[0..count) takes. InvalidArgument when
// a string is longer than 2^32 - 1 bytes (its length does not fit).
absl::StatusOr<size_t> SerializedStringsSize(const StringRef* strings,
                                             int64_t count);

// Writes the serialized form of strings[0..count) to `out`.
// REQUIRES: SerializedStringsSize returned OK; out holds that many bytes.
void SerializeStrings(const StringRef* strings, int64_t count, char* out);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_STRING_IO_H_
