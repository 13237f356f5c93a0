// StringRef: one element of a STRING (DataType::kBytes) tensor as the engine
// holds it in memory (arena, constants, op kernels): a fixed-size handle to
// bytes stored elsewhere. Tensors of strings are therefore laid out, planned
// and copied like tensors of 16-byte numbers, so the ops that only move
// elements (Identity, Reshape, Concat, Gather, Slice, Transpose, Expand,
// Where) move handles and never touch the bytes.
//
// Contract: `data` points at `size` bytes (any bytes, not NUL-terminated);
// `data` may be null when `size` is 0, so an all-zero handle is the empty
// string. A handle never owns its bytes; they belong to one of:
//   - a model constant (ConstantTensor::string_bytes): as long as the Model;
//   - a slot's serialized input buffer: until the slot's next batch;
//   - the executor's StringStore (engine/string_store.h) for strings an op
//     makes while running (Cast to STRING): until the next run on it;
//   - a plan's StringStore for strings made while planning: as long as the
//     plan.
// At the executor boundary (engine/executor.h) strings are in KServe v2's
// serialized form instead; engine/string_io.h converts.
#ifndef COALESCE_ENGINE_STRING_REF_H_
#define COALESCE_ENGINE_STRING_REF_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/data_type.h"

namespace coalesce {

struct StringRef {
  const char* data = nullptr;
  uint64_t size = 0;

  std::string_view view() const {
    return size == 0 ? std::string_view() : std::string_view(data, size);
  }
};
static_assert(sizeof(StringRef) == 16, "a STRING element is 16 bytes");

// Bytes one element takes in engine memory (arena, constants, kernels):
// ElementByteSize, except sizeof(StringRef) for kBytes. ElementByteSize(kBytes)
// stays 0, which the wire and batching layers read as "variable length".
constexpr size_t StorageByteSize(DataType type) {
  return type == DataType::kBytes ? sizeof(StringRef) : ElementByteSize(type);
}

// No tensor the engine holds may take more than this (1 TiB): a size read
// from a corrupt or hostile model is refused instead of overflowing.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// Bytes `count` elements of `type` take in engine memory; nullopt when
// count is negative or they would take more than kMaxTensorBytes.
constexpr std::optional<size_t> CheckedStorageBytes(int64_t count,
                                                    DataType type) {
  const int64_t element = static_cast<int64_t>(StorageByteSize(type));
  if (count < 0 || (element > 0 && count > kMaxTensorBytes / element))
    return std::nullopt;
  return static_cast<size_t>(count * element);
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_STRING_REF_H_
