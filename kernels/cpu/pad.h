// Pad for any element type (sizes in bytes). Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_PAD_H_
#define COALESCE_KERNELS_CPU_PAD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

enum class PadMode { kConstant, kReflect, kEdge };

// Writes `src` (dims in_dims) into out (dims in_dims[d] + begin[d] + end[d])
// at offset `begin`, filling the border: kConstant with the element at
// `constant_value`, kEdge with the nearest edge element, kReflect by mirroring
// without repeating the edge. Negative pads crop.
// REQUIRES: every out dim >= 0; for kReflect and kEdge each padded dim is
// non-empty, and for kReflect pads are below the dim (dim 1 repeats the edge).
void Pad(const void* src, const std::vector<int64_t>& in_dims,
         const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
         PadMode mode, const void* constant_value, size_t element_bytes,
         void* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_PAD_H_
