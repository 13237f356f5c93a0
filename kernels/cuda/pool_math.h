// The math of the CUDA pooling, LRN and per-channel kernels (pool.cu), one
// output element at a time. Host and device; unit-tested on the host
// (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_POOL_MATH_H_
#define COALESCE_KERNELS_CUDA_POOL_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// A 2-D pooling window over one [in_h, in_w] plane. Pads may differ at the
// two ends (ONNX pads, auto_pad resolved by the caller); the output size is
// given (ceil_mode is in it).
struct Pool2DGeometry {
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool max = true;
  bool count_include_pad = false;  // average only
};

// Output (p, q) of `plane`. Max ignores padding; average divides by the
// window's positions inside the input, or, with count_include_pad, inside
// the padded input (never past the end padding).
COALESCE_HD float PoolValue(const Pool2DGeometry& g, const float* plane,
                            int64_t p, int64_t q) {
  const int64_t h0 = p * g.stride_h - g.pad_top;
  const int64_t w0 = q * g.stride_w - g.pad_left;
  float acc = g.max ? -INFINITY : 0.0f;
  int64_t inside = 0, padded = 0;
  for (int64_t i = 0; i < g.kernel_h; ++i) {
    const int64_t h = h0 + i * g.dilation_h;
    if (h >= g.in_h + g.pad_bottom) break;
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t w = w0 + j * g.dilation_w;
      if (w >= g.in_w + g.pad_right) break;
      ++padded;
      if (h < 0 || w < 0 || h >= g.in_h || w >= g.in_w) continue;
      const float v = plane[h * g.in_w + w];
      ++inside;
      if (g.max) {
        acc = v > acc || v != v ? v : acc;  // NaN propagates
      } else {
        acc += v;
      }
    }
  }
  if (g.max) return acc;
  const int64_t count = g.count_include_pad ? padded : inside;
  return count > 0 ? acc / static_cast<float>(count) : 0.0f;
}

// LRN across channels of element (c, s) of one image [channels, spatial]:
// x / (bias + alpha / size * sum of x^2 over channels
// [c - (size-1)/2, c + size/2]) ^ beta.
COALESCE_HD float LrnValue(const float* image, int64_t channels,
                           int64_t spatial, int64_t c, int64_t s, int64_t size,
                           float alpha, float beta, float bias) {
  const int64_t lo = c - (size - 1) / 2 < 0 ? 0 : c - (size - 1) / 2;
  const int64_t hi = c + size / 2 > channels - 1 ? channels - 1 : c + size / 2;
  float sum = 0.0f;
  for (int64_t k = lo; k <= hi; ++k) {
    const float v = image[k * spatial + s];
    sum += v * v;
  }
  const float x = image[c * spatial + s];
  return x * powf(bias + alpha / static_cast<float>(size) * sum, -beta);
}

// The channel of element `i` of an [N, channels, spatial] tensor.
COALESCE_HD int64_t ChannelOf(int64_t i, int64_t channels, int64_t spatial) {
  return (i / spatial) % channels;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_POOL_MATH_H_
