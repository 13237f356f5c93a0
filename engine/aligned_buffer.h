// AlignedBuffer: an owned, 64-byte aligned block of host memory that only
// grows. Reserve() reallocates (dropping the contents) only when asked for more
// than the current capacity, so a buffer sized once for a shape keeps its
// address across runs of that shape. Not thread-safe; move-only.
#ifndef COALESCE_ENGINE_ALIGNED_BUFFER_H_
#define COALESCE_ENGINE_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace coalesce {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Ensures capacity() >= bytes. Contents are kept unless the buffer grows.
  // ResourceExhausted when the memory cannot be had (the buffer is then empty).
  absl::Status Reserve(size_t bytes);

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  // How many times this buffer has allocated memory.
  int64_t allocation_count() const { return allocation_count_; }

 private:
  void Release();

  char* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t allocation_count_ = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_ALIGNED_BUFFER_H_
