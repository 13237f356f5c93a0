// StringStore: owns the bytes of strings made while a plan is computed or run
// (Cast to STRING), so that the StringRef handles an op writes
// (engine/string_ref.h) stay valid until Clear().
//
// The CPU executor owns one per instance, cleared at the start of every run
// and read (serialized into the slot's outputs) right after it; a plan owns
// one for the strings it computes while planning. Bytes are packed into
// chunks that are kept across Clear(), so runs that make a similar amount of
// strings stop allocating after the first. Not thread-safe.
#ifndef COALESCE_ENGINE_STRING_STORE_H_
#define COALESCE_ENGINE_STRING_STORE_H_

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/string_ref.h"

namespace coalesce {

class StringStore {
 public:
  StringStore() = default;
  StringStore(const StringStore&) = delete;
  StringStore& operator=(const StringStore&) = delete;

  // A handle to a copy of `bytes`, valid until Clear() or destruction. The
  // empty string gets {nullptr, 0}. ResourceExhausted when memory cannot be
  // had.
  absl::StatusOr<StringRef> Add(std::string_view bytes);

  // Invalidates every handle Add returned; keeps the memory for reuse.
  void Clear();

  // Bytes held by handles since the last Clear().
  size_t bytes_used() const { return bytes_used_; }

 private:
  static constexpr size_t kChunkBytes = 64 * 1024;

  struct Chunk {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
  };

  std::vector<Chunk> chunks_;
  size_t current_ = 0;     // the chunk being filled
  size_t chunk_used_ = 0;  // bytes used in chunks_[current_]
  size_t bytes_used_ = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_STRING_STORE_H_
