#include "kernels/cpu/copy.h"

#include <cstring>

namespace coalesce::kernels {

void CopyBytes(const void* src, size_t n, void* dst) {
  if (n == 0 || src == dst) return;
  std::memcpy(dst, src, n);
}

void Concat(const std::vector<const void*>& inputs,
            const std::vector<size_t>& chunk_bytes, int64_t outer, void* out) {
  char* dst = static_cast<char*>(out);
  for (int64_t r = 0; r < outer; ++r) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const char* src =
          static_cast<const char*>(inputs[i]) + r * chunk_bytes[i];
      CopyBytes(src, chunk_bytes[i], dst);
      dst += chunk_bytes[i];
    }
  }
}

}  // namespace coalesce::kernels
