#include "engine/string_store.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace coalesce {

absl::StatusOr<StringRef> StringStore::Add(std::string_view bytes) {
  if (bytes.empty()) return StringRef{};
  // Skip chunks without room for the whole string.
  while (current_ < chunks_.size() &&
         chunks_[current_].capacity - chunk_used_ < bytes.size()) {
    ++current_;
    chunk_used_ = 0;
  }
  if (current_ == chunks_.size()) {
    const size_t capacity = std::max(kChunkBytes, bytes.size());
    Chunk chunk{std::unique_ptr<char[]>(new (std::nothrow) char[capacity]),
                capacity};
    if (chunk.data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate ", capacity, " bytes for strings"));
    }
    chunks_.push_back(std::move(chunk));
    chunk_used_ = 0;
  }
  char* at = chunks_[current_].data.get() + chunk_used_;
  std::memcpy(at, bytes.data(), bytes.size());
  chunk_used_ += bytes.size();
  bytes_used_ += bytes.size();
  return StringRef{at, bytes.size()};
}

void StringStore::Clear() {
  current_ = 0;
  chunk_used_ = 0;
  bytes_used_ = 0;
}

}  // namespace coalesce
