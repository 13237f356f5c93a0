// ArgMax along one axis. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_ARGMAX_H_
#define COALESCE_KERNELS_CPU_ARGMAX_H_

#include <cstdint>

namespace coalesce::kernels {

// Views `src` as [outer, axis_dim, inner] and writes out[o, i] = the index
// along the axis of the largest src[o, :, i]; ties go to the first index, or
// the last when `select_last`. Defined for T = float, int64_t, int32_t.
// REQUIRES: axis_dim >= 1; out holds outer * inner values.
template <typename T>
void ArgMax(const T* src, int64_t outer, int64_t axis_dim, int64_t inner,
            bool select_last, int64_t* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ARGMAX_H_
