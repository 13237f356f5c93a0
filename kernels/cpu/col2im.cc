#include "kernels/cpu/col2im.h"

#include <array>
#include <cstddef>

namespace coalesce::kernels {
namespace {

// The geometry padded to exactly three spatial dims.
struct Dims3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1},
      stride{1, 1, 1}, dilation{1, 1, 1}, pad{0, 0, 0};
};

Dims3 ToDims3(const Col2ImGeometry& g) {
  Dims3 d;
  for (size_t i = 0; i < g.in_spatial.size() && i < 3; ++i) {
    d.in[i] = g.in_spatial[i];
    d.out[i] = g.out_spatial[i];
    d.kernel[i] = g.kernel[i];
    d.stride[i] = g.strides[i];
    d.dilation[i] = g.dilations[i];
    d.pad[i] = g.pads_begin[i];
  }
  return d;
}

// Adds one kernel offset's row of columns (all input positions) to a channel.
void AddRow(const Dims3& d, const std::array<int64_t, 3>& k, const float* row,
            float* image) {
  for (int64_t i0 = 0; i0 < d.in[0]; ++i0) {
    const int64_t o0 = i0 * d.stride[0] - d.pad[0] + k[0] * d.dilation[0];
    if (o0 < 0 || o0 >= d.out[0]) continue;
    for (int64_t i1 = 0; i1 < d.in[1]; ++i1) {
      const int64_t o1 = i1 * d.stride[1] - d.pad[1] + k[1] * d.dilation[1];
      if (o1 < 0 || o1 >= d.out[1]) continue;
      const float* src = row + (i0 * d.in[1] + i1) * d.in[2];
      float* dst = image + (o0 * d.out[1] + o1) * d.out[2];
      for (int64_t i2 = 0; i2 < d.in[2]; ++i2) {
        const int64_t o2 = i2 * d.stride[2] - d.pad[2] + k[2] * d.dilation[2];
        if (o2 >= 0 && o2 < d.out[2]) dst[o2] += src[i2];
      }
    }
  }
}

}  // namespace

void Col2ImAdd(const Col2ImGeometry& g, const float* cols, float* image) {
  const Dims3 d = ToDims3(g);
  const int64_t in_size = d.in[0] * d.in[1] * d.in[2];
  const int64_t out_size = d.out[0] * d.out[1] * d.out[2];
  const int64_t kernel_size = d.kernel[0] * d.kernel[1] * d.kernel[2];
#pragma omp parallel for if (g.channels * kernel_size * in_size > (1 << 15))
  for (int64_t c = 0; c < g.channels; ++c) {
    float* channel_image = image + c * out_size;
    for (int64_t k = 0; k < kernel_size; ++k) {
      const std::array<int64_t, 3> offset = {k / (d.kernel[1] * d.kernel[2]),
                                             k / d.kernel[2] % d.kernel[1],
                                             k % d.kernel[2]};
      AddRow(d, offset, cols + (c * kernel_size + k) * in_size, channel_image);
    }
  }
}

}  // namespace coalesce::kernels
