// col2im: scatters the columns of a transposed convolution back into an
// image, summing where kernel windows overlap. Spatial rank 1 to 3 (missing
// trailing dims count as size 1). Stateless and thread-safe; threaded over
// channels per kernels/cpu/threading.h.
#ifndef COALESCE_KERNELS_CPU_COL2IM_H_
#define COALESCE_KERNELS_CPU_COL2IM_H_

#include <cstdint>
#include <vector>

namespace coalesce::kernels {

struct Col2ImGeometry {
  int64_t channels = 0;
  std::vector<int64_t> in_spatial;   // the columns' positions
  std::vector<int64_t> out_spatial;  // the image
  std::vector<int64_t> kernel, strides, dilations, pads_begin;
};

// cols is [channels, prod(kernel), prod(in_spatial)]; for every channel,
// kernel offset k and input position i, adds cols[c, k, i] to
// image[c, i * stride - pad_begin + k * dilation] when that lies inside the
// image. `image` is accumulated into, not cleared.
void Col2ImAdd(const Col2ImGeometry& g, const float* cols, float* image);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_COL2IM_H_
