// Cast between the numeric element types the engine computes with. Stateless
// and thread-safe.
#ifndef COALESCE_KERNELS_CPU_CAST_H_
#define COALESCE_KERNELS_CPU_CAST_H_

#include <cstdint>

namespace coalesce::kernels {

enum class CastType { kFloat32, kInt64, kInt32, kBool };

// dst[i] = src[i] converted: to bool is "!= 0"; float to integer truncates
// toward zero (out-of-range values are unspecified, as in ONNX); bool reads
// any nonzero byte as true. `dst` may equal `src` only when the types match.
void Cast(CastType from, const void* src, CastType to, int64_t count,
          void* dst);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_CAST_H_
