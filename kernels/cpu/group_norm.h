// Group normalization of a float tensor [N, C, spatial...] viewed as
// [N, C, S]: the C channels split into `groups` groups of C / groups
// channels; each (image, group) is normalized to zero mean and unit
// variance over its channels and positions, then each channel is scaled and
// shifted. Instance normalization is the case groups = C. Statistics in
// double. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_GROUP_NORM_H_
#define COALESCE_KERNELS_CPU_GROUP_NORM_H_

#include <cstdint>

namespace coalesce::kernels {

struct GroupNormParams {
  int64_t n = 0, c = 0, spatial = 1, groups = 1;
  float epsilon = 1e-5f;
  // Per channel (C values), or per group (`groups` values) when
  // affine_per_group (GroupNormalization-18's form).
  const float* scale = nullptr;
  const float* bias = nullptr;
  bool affine_per_group = false;
};

// REQUIRES: c % groups == 0; `out` overlaps not `in`.
void GroupNorm(const float* in, const GroupNormParams& params, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_GROUP_NORM_H_
