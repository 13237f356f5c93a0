#include "engine/device/simulated_cnn.h"

#include <cstdint>
#include <vector>

#include "engine/device/kernel_args.h"
#include "engine/device/simulated_floats.h"
#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/pool_math.h"

namespace coalesce {

namespace kc = kernels::cuda;

namespace {

// A [d0, d1, d2, d3] tensor stored as `t` (NHWC-ordered when
// channels_last: [d0, d2, d3, d1]) as float32 in NCHW order.
std::vector<float> AsNchw(FloatIn t, bool channels_last, int64_t d0, int64_t d1,
                          int64_t d2, int64_t d3) {
  std::vector<float> out(static_cast<size_t>(d0 * d1 * d2 * d3));
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      for (int64_t k = 0; k < d2; ++k)
        for (int64_t l = 0; l < d3; ++l)
          out[Offset4(false, d1, d2, d3, i, j, k, l)] =
              Load(t, Offset4(channels_last, d1, d2, d3, i, j, k, l));
  return out;
}

}  // namespace

void RunSimulatedConv2D(const ConvArgs& a) {
  const bool nhwc = a.channels_last;
  const int64_t cg = a.c / a.groups, mg = a.m / a.groups;
  const std::vector<float> x = AsNchw(a.x, nhwc, a.n, a.c, a.in_h, a.in_w);
  // KRSC is OIHW's NHWC: [m, kernel_h, kernel_w, c / groups].
  const std::vector<float> filter =
      AsNchw(a.w, nhwc, a.m, cg, a.kernel_h, a.kernel_w);
  const bool half = a.x.is_16bit();
  const kc::Activation act = ToKernel(a.activation.kind);
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t m = 0; m < a.m; ++m) {
      const int64_t g = m / mg;
      for (int64_t p = 0; p < a.out_h; ++p) {
        for (int64_t q = 0; q < a.out_w; ++q) {
          double sum = 0;
          for (int64_t c = 0; c < cg; ++c) {
            const float* plane =
                x.data() + ((n * a.c) + g * cg + c) * a.in_h * a.in_w;
            const float* kernel =
                filter.data() + (m * cg + c) * a.kernel_h * a.kernel_w;
            for (int64_t r = 0; r < a.kernel_h; ++r) {
              const int64_t h = p * a.stride_h - a.pad_top + r * a.dilation_h;
              if (h < 0 || h >= a.in_h) continue;
              for (int64_t s = 0; s < a.kernel_w; ++s) {
                const int64_t w =
                    q * a.stride_w - a.pad_left + s * a.dilation_w;
                if (w < 0 || w >= a.in_w) continue;
                sum +=
                    double{plane[h * a.in_w + w]} * kernel[r * a.kernel_w + s];
              }
            }
          }
          const int64_t at = Offset4(nhwc, a.m, a.out_h, a.out_w, n, m, p, q);
          float v = static_cast<float>(sum);
          if (half) {
            const Half rounded = NarrowBits(v, a.x.type);
            if (!a.y.is_16bit()) a.y_scratch[at] = rounded;
            v = WidenBits(rounded, a.x.type);
          }
          if (a.bias != nullptr) v += a.bias[m];
          if (a.z.data != nullptr) v += Load(a.z, at);
          Store(a.y, at,
                kc::ApplyActivation(act, v, a.activation.alpha,
                                    a.activation.beta));
        }
      }
    }
  }
}

void RunSimulatedPool2D(const Pool2DArgs& args, FloatIn x, FloatOut y) {
  const kc::Pool2DGeometry g = ToGeometry(args);
  const bool nhwc = args.channels_last;
  const int64_t channels = nhwc ? args.channels : 1;
  std::vector<float> plane(static_cast<size_t>(g.in_h * g.in_w));
  for (int64_t p = 0; p < args.planes; ++p) {
    const int64_t n = p / channels, c = p % channels;
    for (int64_t h = 0; h < g.in_h; ++h)
      for (int64_t w = 0; w < g.in_w; ++w)
        plane[h * g.in_w + w] =
            Load(x, nhwc ? Offset4(true, channels, g.in_h, g.in_w, n, c, h, w)
                         : (p * g.in_h + h) * g.in_w + w);
    for (int64_t i = 0; i < g.out_h; ++i)
      for (int64_t j = 0; j < g.out_w; ++j)
        Store(y,
              nhwc ? Offset4(true, channels, g.out_h, g.out_w, n, c, i, j)
                   : (p * g.out_h + i) * g.out_w + j,
              kc::PoolValue(g, plane.data(), i, j));
  }
}

void RunSimulatedChannelAffine(const ChannelAffineArgs& a) {
  const int64_t n = a.batch * a.channels * a.spatial;
  const kc::Activation f = ToKernel(a.activation.kind);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = a.channels_last ? i % a.channels
                                      : kc::ChannelOf(i, a.channels, a.spatial);
    const float v = Load(a.x, i) * (a.scale != nullptr ? a.scale[c] : 1.0f) +
                    (a.shift != nullptr ? a.shift[c] : 0.0f);
    Store(a.y, i,
          kc::ApplyActivation(f, v, a.activation.alpha, a.activation.beta));
  }
}

}  // namespace coalesce
