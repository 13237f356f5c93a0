// The per-element math of the CUDA Resize kernel (resize.cu): nearest and
// N-linear interpolation with the ONNX coordinate transformations, as the
// CPU engine computes them (kernels/cpu/resize.cc: coordinates in double,
// nearest rounding, linear taps past the edge reading the edge element).
// Cubic, antialias, exclude_outside and tf_crop_and_resize are the CPU's
// only (the lowering refuses them). Host and device; unit-tested on the
// host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_RESIZE_MATH_H_
#define COALESCE_KERNELS_CUDA_RESIZE_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

inline constexpr int kMaxResizeRank = 8;

enum class ResizeCoordinateKind {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
};

enum class NearestKind { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeIndexer {
  int rank = 0;
  bool linear = false;  // else nearest
  ResizeCoordinateKind coordinate = ResizeCoordinateKind::kHalfPixel;
  NearestKind nearest = NearestKind::kRoundPreferFloor;
  int64_t in[kMaxResizeRank] = {};
  int64_t out[kMaxResizeRank] = {};
  double scale[kMaxResizeRank] = {};
};

// Input coordinate of output index y along an axis.
COALESCE_HD double ResizeSource(ResizeCoordinateKind mode, double y, int64_t in,
                                int64_t out, double scale) {
  const double length = scale * static_cast<double>(in);
  switch (mode) {
    case ResizeCoordinateKind::kHalfPixel:
      return (y + 0.5) / scale - 0.5;
    case ResizeCoordinateKind::kHalfPixelSymmetric: {
      const double offset =
          in / 2.0 * (1.0 - static_cast<double>(out) / length);
      return offset + (y + 0.5) / scale - 0.5;
    }
    case ResizeCoordinateKind::kPytorchHalfPixel:
      return out > 1 ? (y + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordinateKind::kAlignCorners:
      return length == 1.0 ? 0.0
                           : y * static_cast<double>(in - 1) / (length - 1.0);
    case ResizeCoordinateKind::kAsymmetric:
      return y / scale;
    case ResizeCoordinateKind::kTfHalfPixelForNn:
      return (y + 0.5) / scale;
  }
  return 0.0;
}

COALESCE_HD int64_t ClampIndex(int64_t i, int64_t in) {
  return i < 0 ? 0 : (i >= in ? in - 1 : i);
}

COALESCE_HD int64_t NearestSource(double x, NearestKind rounding, int64_t in) {
  const double base = floor(x);
  const double frac = x - base;
  bool up = false;
  if (frac != 0.0) {
    switch (rounding) {
      case NearestKind::kRoundPreferFloor:
        up = frac > 0.5;
        break;
      case NearestKind::kRoundPreferCeil:
        up = frac >= 0.5;
        break;
      case NearestKind::kFloor:
        break;
      case NearestKind::kCeil:
        up = true;
        break;
    }
  }
  return ClampIndex(static_cast<int64_t>(base) + (up ? 1 : 0), in);
}

// The two linear taps of input coordinate x: indices (clamped) and
// weights; an integral x takes weight 1 on itself (from x - 1, as the CPU).
COALESCE_HD void LinearTaps(double x, int64_t in, int64_t index[2],
                            float weight[2]) {
  double base = floor(x);
  double ratio = x - base;
  if (ratio == 0.0) base -= 1.0, ratio = 1.0;
  index[0] = ClampIndex(static_cast<int64_t>(base), in);
  index[1] = ClampIndex(static_cast<int64_t>(base) + 1, in);
  weight[0] = static_cast<float>(1.0 - ratio);
  weight[1] = static_cast<float>(ratio);
}

// True when an axis is copied (no interpolation), as the CPU decides.
COALESCE_HD bool ResizeIdentity(const ResizeIndexer& ix, int d) {
  const double delta = ix.scale[d] - 1.0;
  return ix.out[d] == ix.in[d] && delta <= 1e-9 && delta >= -1e-9;
}

// Output element i of x resized.
COALESCE_HD float ResizeElement(const ResizeIndexer& ix, const float* x,
                                int64_t i) {
  int64_t index[kMaxResizeRank][2];
  float weight[kMaxResizeRank][2];
  int taps[kMaxResizeRank];
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t y = i % ix.out[d];
    i /= ix.out[d];
    taps[d] = 1;
    weight[d][0] = 1.0f;
    if (ResizeIdentity(ix, d)) {
      index[d][0] = y;
      continue;
    }
    const double source = ResizeSource(ix.coordinate, static_cast<double>(y),
                                       ix.in[d], ix.out[d], ix.scale[d]);
    if (ix.linear) {
      LinearTaps(source, ix.in[d], index[d], weight[d]);
      taps[d] = 2;
    } else {
      index[d][0] = NearestSource(source, ix.nearest, ix.in[d]);
    }
  }
  // Sum over every combination of taps (one per axis), odometer order.
  int pick[kMaxResizeRank] = {};
  float sum = 0.0f;
  for (;;) {
    int64_t offset = 0;
    float w = 1.0f;
    for (int d = 0; d < ix.rank; ++d) {
      offset = offset * ix.in[d] + index[d][pick[d]];
      w *= weight[d][pick[d]];
    }
    sum += w * x[offset];  // a zero weight too: inf * 0 is NaN, as on the CPU
    int d = ix.rank - 1;
    while (d >= 0 && ++pick[d] == taps[d]) pick[d--] = 0;
    if (d < 0) break;
  }
  return sum;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_RESIZE_MATH_H_
