// Resize (ONNX Resize / Upsample) of a float tensor of any rank: nearest,
// N-linear and N-cubic interpolation, separable per axis, with the ONNX
// coordinate transformations. Stateless and thread-safe; parallel over output
// rows (all axes but the last) with OpenMP.
#ifndef COALESCE_KERNELS_CPU_RESIZE_H_
#define COALESCE_KERNELS_CPU_RESIZE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace coalesce::kernels {

enum class ResizeMode { kNearest, kLinear, kCubic };

// How output coordinate y of an axis maps to input coordinate x, with
// scale = ResizeAxis::scale, length = scale * in (fractional) and out the
// integer output length:
//   kHalfPixel:          x = (y + 0.5) / scale - 0.5
//   kHalfPixelSymmetric: as kHalfPixel, shifted by
//                        in / 2 * (1 - out / length)
//   kPytorchHalfPixel:   as kHalfPixel, but x = 0 when out == 1
//   kAlignCorners:       x = y * (in - 1) / (length - 1), 0 when length == 1
//   kAsymmetric:         x = y / scale
//   kTfHalfPixelForNn:   x = (y + 0.5) / scale
//   kTfCropAndResize:    x = roi_start * (in - 1) +
//                            y * (roi_end - roi_start) * (in - 1) / (out - 1),
//                        or (roi_start + roi_end) / 2 * (in - 1) when
//                        out == 1; outputs with x outside [0, in - 1] take
//                        the extrapolation value.
enum class ResizeCoordinate {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};

// How kNearest picks an input index from x (then clamped to [0, in - 1]);
// an integral x is itself.
enum class NearestRounding {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kFloor,
  kCeil
};

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinate coordinate = ResizeCoordinate::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  // Zero the weights of taps outside the input and renormalize (linear,
  // cubic); otherwise such taps read the nearest edge element.
  bool exclude_outside = false;
  // When downscaling (scale < 1), stretch the linear or cubic filter by
  // 1 / scale so that every input element contributes.
  bool antialias = false;
  float extrapolation_value = 0.0f;
};

// One axis of the tensor. An axis with out == in, scale == 1 and (for
// kTfCropAndResize) roi [0, 1] is copied.
struct ResizeAxis {
  int64_t in = 1;
  int64_t out = 1;
  double scale = 1.0;  // the factor the coordinate transformation divides by
  double roi_start = 0.0;
  double roi_end = 1.0;
};

// A resize prepared for one set of shapes and options: the interpolation
// taps of every axis, computed once. Run allocates nothing; it may be called
// from several threads at once with distinct scratch memory.
class ResizePlan {
 public:
  // REQUIRES: as for Resize below.
  ResizePlan(const std::vector<ResizeAxis>& axes, const ResizeOptions& options);
  ~ResizePlan();
  ResizePlan(ResizePlan&&) noexcept;
  ResizePlan& operator=(ResizePlan&&) noexcept;

  // Bytes of scratch memory Run needs (per-thread row caches).
  size_t scratch_bytes() const;

  // y = x resized. `scratch` holds scratch_bytes(), 8-byte aligned; its
  // contents on entry do not matter. Parallel over output rows (all axes but
  // the last) with OpenMP.
  void Run(const float* x, float* y, void* scratch) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// y (dims axes[a].out) = x (dims axes[a].in) resized. Linear and cubic weigh
// the input taps around x by the interpolation kernel (Keys' cubic with
// coefficient cubic_coeff_a); taps past the edges read the edge element
// unless exclude_outside. REQUIRES: every in >= 1 where out >= 1; `y`
// overlaps not `x`. Builds a ResizePlan and its scratch on every call.
void Resize(const float* x, const std::vector<ResizeAxis>& axes,
            const ResizeOptions& options, float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_RESIZE_H_
