#include "kernels/cpu/gather.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace coalesce::kernels {
namespace {

template <typename Index>
absl::Status GatherImpl(const void* src, int64_t outer, int64_t axis_dim,
                        size_t inner_bytes, const Index* indices,
                        int64_t num_indices, void* out) {
  const char* in = static_cast<const char*>(src);
  char* dst = static_cast<char*>(out);
  for (int64_t i = 0; i < num_indices; ++i) {
    const int64_t index = indices[i];
    if (index < -axis_dim || index >= axis_dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index ", index, " is out of range for an axis of ", axis_dim));
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    const char* block = in + o * axis_dim * inner_bytes;
    for (int64_t i = 0; i < num_indices; ++i) {
      int64_t index = indices[i];
      if (index < 0) index += axis_dim;
      std::memcpy(dst, block + index * inner_bytes, inner_bytes);
      dst += inner_bytes;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Gather(const void* src, int64_t outer, int64_t axis_dim,
                    size_t inner_bytes, const int64_t* indices,
                    int64_t num_indices, void* out) {
  return GatherImpl(src, outer, axis_dim, inner_bytes, indices, num_indices,
                    out);
}

absl::Status Gather(const void* src, int64_t outer, int64_t axis_dim,
                    size_t inner_bytes, const int32_t* indices,
                    int64_t num_indices, void* out) {
  return GatherImpl(src, outer, axis_dim, inner_bytes, indices, num_indices,
                    out);
}

}  // namespace coalesce::kernels
