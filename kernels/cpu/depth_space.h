// DepthToSpace and SpaceToDepth: moves [block, block] tiles between the
// channel axis and the spatial axes of a [N, C, H, W] tensor, for elements of
// 1, 2, 4, 8 or 16 bytes. Stateless and thread-safe; parallel over output rows.
#ifndef COALESCE_KERNELS_CPU_DEPTH_SPACE_H_
#define COALESCE_KERNELS_CPU_DEPTH_SPACE_H_

#include <cstddef>
#include <cstdint>

namespace coalesce::kernels {

// How a channel splits into (depth, tile row i, tile column j):
// kDcr: channel = (i * block + j) * depth_channels + c  (depth-column-row)
// kCrd: channel = (c * block + i) * block + j           (column-row-depth)
// where depth_channels is the channel count of the spatial-side tensor.
enum class DepthSpaceMode { kDcr, kCrd };

// Dims of the tensor on the depth side: [n, c, h, w]. REQUIRES: block >= 1.
struct DepthSpaceShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t block = 1;
};

// x [n, c, h, w] -> y [n, c / block^2, h * block, w * block], with
// y[b, k, h * block + i, w * block + j] = x[b, channel(k, i, j), h, w].
// REQUIRES: c % (block * block) == 0; element_bytes in {1, 2, 4, 8, 16}.
void DepthToSpace(const void* x, const DepthSpaceShape& depth,
                  DepthSpaceMode mode, size_t element_bytes, void* y);

// The inverse: x [n, c / block^2, h * block, w * block] -> y [n, c, h, w],
// where `depth` describes y.
void SpaceToDepth(const void* x, const DepthSpaceShape& depth,
                  DepthSpaceMode mode, size_t element_bytes, void* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_DEPTH_SPACE_H_
