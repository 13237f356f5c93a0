#include "kernels/cpu/einsum.h"

#include <algorithm>

namespace coalesce::kernels {

void Contract(const Contraction& c, const std::vector<const float*>& operands,
              float* out) {
  std::fill(out, out + c.out_count, 0.0f);
  const size_t letters = c.sizes.size();
  int64_t total = 1;
  for (int64_t s : c.sizes) total *= s;
  if (total == 0) return;
  std::vector<int64_t> at(letters, 0);
  std::vector<int64_t> offsets(operands.size(), 0);
  int64_t out_offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    float product = 1.0f;
    for (size_t k = 0; k < operands.size(); ++k)
      product *= operands[k][offsets[k]];
    out[out_offset] += product;
    for (size_t d = letters; d-- > 0;) {
      for (size_t k = 0; k < operands.size(); ++k)
        offsets[k] += c.strides[k][d];
      out_offset += c.out_strides[d];
      if (++at[d] < c.sizes[d]) break;
      for (size_t k = 0; k < operands.size(); ++k)
        offsets[k] -= c.strides[k][d] * c.sizes[d];
      out_offset -= c.out_strides[d] * c.sizes[d];
      at[d] = 0;
    }
  }
}

}  // namespace coalesce::kernels
