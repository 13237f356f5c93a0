// The math of the CUDA pooling, LRN and per-channel kernels (pool.cu), one
// output element at a time, over NCHW or (pooling, per-channel) NHWC
// tensors of float32 or 16-bit elements (float_storage.h), computed in
// float32. Host and device; unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_POOL_MATH_H_
#define COALESCE_KERNELS_CUDA_POOL_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/float_storage.h"
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

// Output (p, q) of `plane`, whose pixel (h, w) is plane[(h * in_w + w) *
// pixel_stride] (1 in NCHW, the channel count in NHWC), of float, uint16_t
// (float16 bits) or BFloat16Bits elements. Max ignores padding; average
// divides by the window's positions inside the input, or, with
// count_include_pad, inside the padded input (never past the end padding).
template <typename T>
COALESCE_HD float PoolValue(const Pool2DGeometry& g, const T* plane, int64_t p,
                            int64_t q, int64_t pixel_stride = 1) {
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
      const float v = ToFloat(plane[(h * g.in_w + w) * pixel_stride]);
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

// How the planes of a pooling lie in memory: one after another, [planes,
// h, w] (NCHW); or, with channels_last, interleaved, [planes / channels,
// h, w, channels] (NHWC). The output is laid out as the input.
struct PoolLayout {
  int64_t planes = 0;
  int64_t channels = 1;  // divides planes; read only with channels_last
  bool channels_last = false;
};

// Where output element `index` (in the output's layout) comes from: the
// offset of its plane's first pixel in the input, the input's distance
// between neighbouring pixels of a plane, and its output position (p, q).
struct PoolSite {
  int64_t plane_offset = 0, pixel_stride = 1, p = 0, q = 0;
};

COALESCE_HD PoolSite PoolSiteOf(const Pool2DGeometry& g, const PoolLayout& l,
                                int64_t index) {
  PoolSite s;
  if (!l.channels_last) {  // [planes, out_h, out_w]
    const int64_t plane = index / (g.out_h * g.out_w);
    const int64_t r = index % (g.out_h * g.out_w);
    s.plane_offset = plane * g.in_h * g.in_w;
    s.p = r / g.out_w;
    s.q = r % g.out_w;
    return s;
  }
  // [images, out_h, out_w, channels]
  const int64_t channel = index % l.channels;
  const int64_t pixel = index / l.channels;  // (image, p, q) flattened
  const int64_t image = pixel / (g.out_h * g.out_w);
  const int64_t r = pixel % (g.out_h * g.out_w);
  s.plane_offset = image * g.in_h * g.in_w * l.channels + channel;
  s.pixel_stride = l.channels;
  s.p = r / g.out_w;
  s.q = r % g.out_w;
  return s;
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

// A tensor with a channel axis: [batch, channels, spatial] (NCHW), or
// [batch, spatial, channels] with channels_last (NHWC).
struct ChannelLayout {
  int64_t batch = 0, channels = 1, spatial = 1;
  bool channels_last = false;
};

COALESCE_HD int64_t ElementCount(const ChannelLayout& l) {
  return l.batch * l.channels * l.spatial;
}

// The channel of element `i`.
COALESCE_HD int64_t ChannelOf(const ChannelLayout& l, int64_t i) {
  return l.channels_last ? i % l.channels : ChannelOf(i, l.channels, l.spatial);
}

// The per-channel map of ChannelAffine and of a convolution's epilogue,
//   y = act(x * scale[c] + shift[c] + z),
// in float32 and in that order; scale null stands for 1, shift null for 0,
// and z is an optional residual of y's shape and layout. A convolution's
// epilogue is x its result, scale null, shift its bias.
struct ChannelAffineMap {
  ChannelLayout layout;
  const float* scale = nullptr;  // layout.channels elements, or null
  const float* shift = nullptr;  // layout.channels elements, or null
  Activation act = Activation::kIdentity;
  float alpha = 0.0f, beta = 0.0f;  // ApplyActivation's
};

// Element i of the map's result for x of element type X and z (null for
// none) of type Z, each float, uint16_t (float16 bits) or BFloat16Bits.
template <typename X, typename Z>
COALESCE_HD float ChannelAffineValue(const ChannelAffineMap& m, const X* x,
                                     const Z* z, int64_t i) {
  const int64_t c = ChannelOf(m.layout, i);
  float v = ToFloat(x[i]) * (m.scale != nullptr ? m.scale[c] : 1.0f) +
            (m.shift != nullptr ? m.shift[c] : 0.0f);
  if (z != nullptr) v += ToFloat(z[i]);
  return ApplyActivation(m.act, v, m.alpha, m.beta);
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_POOL_MATH_H_
