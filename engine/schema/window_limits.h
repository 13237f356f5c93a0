// The bound on the window attributes of Conv, ConvTranspose, the pools and
// DepthToSpace/SpaceToDepth: kernel sizes, strides, dilations, pads, group
// and blocksize. No real model comes near it; it keeps the size arithmetic
// of a corrupt or hostile model ((kernel - 1) * dilation + pads + input,
// channels * group, H * blocksize) far from int64 overflow, since tensor
// dims are at most 2^40 (kMaxTensorBytes).
#ifndef COALESCE_ENGINE_SCHEMA_WINDOW_LIMITS_H_
#define COALESCE_ENGINE_SCHEMA_WINDOW_LIMITS_H_

#include <cstdint>

namespace coalesce {

inline constexpr int64_t kMaxWindowAttribute = int64_t{1} << 20;

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_WINDOW_LIMITS_H_
