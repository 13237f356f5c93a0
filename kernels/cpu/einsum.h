// A general tensor contraction (what an Einsum equation computes), as one
// loop over every letter's index: out[o] = sum over the summed letters of
// the product of the operands. Each operand and the output give a stride per
// letter (0 where the letter is absent or broadcast; a letter repeated in
// one operand adds its strides, which is a diagonal). Correct for any
// equation; as fast as a loop nest, not a GEMM. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_EINSUM_H_
#define COALESCE_KERNELS_CPU_EINSUM_H_

#include <cstdint>
#include <vector>

namespace coalesce::kernels {

struct Contraction {
  std::vector<int64_t> sizes;                 // per letter
  std::vector<std::vector<int64_t>> strides;  // per operand, per letter
  std::vector<int64_t> out_strides;           // per letter
  int64_t out_count = 0;
};

// REQUIRES: the strides address within each operand and `out`.
void Contract(const Contraction& c, const std::vector<const float*>& operands,
              float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_EINSUM_H_
