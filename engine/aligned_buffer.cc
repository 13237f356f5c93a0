#include "engine/aligned_buffer.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {

AlignedBuffer::~AlignedBuffer() { Release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      allocation_count_(other.allocation_count_) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    allocation_count_ = other.allocation_count_;
  }
  return *this;
}

absl::Status AlignedBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return absl::OkStatus();
  Release();
  // Allocate at least one alignment unit so data() is never null.
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const size_t size = rounded == 0 ? kAlignment : rounded;
  void* p = ::operator new(size, std::align_val_t(kAlignment), std::nothrow);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  data_ = static_cast<char*>(p);
  capacity_ = size;
  ++allocation_count_;
  return absl::OkStatus();
}

void AlignedBuffer::Release() {
  if (data_ != nullptr) {
    ::operator delete(data_, std::align_val_t(kAlignment));
  }
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace coalesce
