#include "kernels/cpu/pool.h"

#include <algorithm>
#include <array>
#include <limits>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelWork = 1 << 15;
constexpr size_t kAxes = 3;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One spatial axis of the pooling.
struct Axis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1;
  int64_t pad_begin = 0, pad_end = 0;
};

// The input positions output o reads along one axis.
struct Window {
  int64_t first;   // first position inside the input
  int64_t count;   // positions inside the input
  int64_t padded;  // positions inside [-pad_begin, in + pad_end)
};

int64_t CeilDiv(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

Window WindowAt(const Axis& a, int64_t o) {
  const int64_t start = o * a.stride - a.pad_begin, d = a.dilation;
  const int64_t lo = start >= 0 ? 0 : CeilDiv(-start, d);
  const int64_t hi = std::min(a.kernel, CeilDiv(a.in - start, d));
  return {start + lo * d, std::max<int64_t>(0, hi - lo),
          std::min(a.kernel, CeilDiv(a.in + a.pad_end - start, d))};
}

// The outputs [lo, hi) whose tap t is inside the input.
struct Range {
  int64_t lo, hi;
};

Range TapRange(const Axis& a, int64_t t) {
  // o * stride - pad_begin + t * dilation in [0, in).
  const int64_t shift = a.pad_begin - t * a.dilation;
  const int64_t lo = std::min(a.out, shift <= 0 ? 0 : CeilDiv(shift, a.stride));
  const int64_t hi = std::min(a.out, CeilDiv(a.in + shift, a.stride));
  return {lo, std::max(lo, hi)};
}

// The outputs whose taps are all inside the input (taps' ranges shrink as t
// grows), or an empty range at the start.
Range Interior(const Axis& a) {
  const Range r = {TapRange(a, 0).lo, TapRange(a, a.kernel - 1).hi};
  return r.lo < r.hi ? r : Range{0, 0};
}

using Axes = std::array<Axis, kAxes>;

// The tap ranges of the width axis, computed once per pooling (on the
// stack: kernels wider than kCachedTaps compute them per row).
constexpr int64_t kCachedTaps = 32;
struct WidthTaps {
  explicit WidthTaps(const Axis& w) : interior(Interior(w)) {
    for (int64_t t = 0; t < std::min(w.kernel, kCachedTaps); ++t)
      taps[t] = TapRange(w, t);
  }
  Range At(const Axis& w, int64_t t) const {
    return t < kCachedTaps ? taps[t] : TapRange(w, t);
  }
  Range interior;
  Range taps[kCachedTaps];
};

// Three axes, 1-D and 2-D pooling led by unit axes.
Axes MakeAxes(const PoolGeometry& g) {
  Axes axes;
  const int lead = static_cast<int>(kAxes) - g.axes;
  for (int a = 0; a < g.axes; ++a) {
    axes[lead + a] = {g.in[a],      g.out[a],       g.kernel[a],
                      g.strides[a], g.dilations[a], g.pads_begin[a],
                      g.pads_end[a]};
  }
  return axes;
}

struct RowPosition {
  int64_t plane, od, oh;
};

RowPosition SplitRow(const Axes& ax, int64_t row) {
  const int64_t oh = row % ax[1].out;
  const int64_t rest = row / ax[1].out;
  return {rest / ax[0].out, rest % ax[0].out, oh};
}

int64_t SpatialOffset(const Axes& ax, int64_t id, int64_t ih, int64_t iw,
                      bool column_major) {
  if (column_major) return id + ax[0].in * (ih + ax[1].in * iw);
  return (id * ax[1].in + ih) * ax[2].in + iw;
}

// Max of one output row and the argmax offsets, window by window.
void MaxRow(const Axes& ax, const float* plane, int64_t od, int64_t oh,
            bool column_major, int64_t index_base, float* y, int64_t* indices) {
  const Axis &d = ax[0], &h = ax[1], &w = ax[2];
  const Window wd = WindowAt(d, od), wh = WindowAt(h, oh);
  for (int64_t ow = 0; ow < w.out; ++ow) {
    const Window ww = WindowAt(w, ow);
    float best = kNegInf;
    int64_t bd = -1, bh = -1, bw = -1;
    for (int64_t kd = 0; kd < wd.count; ++kd) {
      const int64_t id = wd.first + kd * d.dilation;
      for (int64_t kh = 0; kh < wh.count; ++kh) {
        const int64_t ih = wh.first + kh * h.dilation;
        const float* row = plane + (id * h.in + ih) * w.in;
        for (int64_t kw = 0; kw < ww.count; ++kw) {
          const int64_t iw = ww.first + kw * w.dilation;
          if (row[iw] > best || bd < 0) {
            best = row[iw];
            bd = id, bh = ih, bw = iw;
          }
        }
      }
    }
    y[ow] = best;
    indices[ow] =
        bd < 0 ? -1 : index_base + SpatialOffset(ax, bd, bh, bw, column_major);
  }
}

constexpr int64_t kRowChunk = 16;  // input rows combined per interior pass

template <bool kMax>
float Combine(float a, float b) {
  return kMax ? std::max(a, b) : a + b;
}

// y[ow] = combine(y[ow], row[ow * stride + shift]) for ow in [lo, hi).
template <bool kMax>
void ApplyTap(const float* row, int64_t stride, int64_t shift, int64_t lo,
              int64_t hi, float* y) {
  for (int64_t ow = lo; ow < hi; ++ow)
    y[ow] = Combine<kMax>(y[ow], row[ow * stride + shift]);
}

// Combines one input row's in-input taps into the outputs outside the
// interior (those with a tap in the padding), tap by tap.
template <bool kMax>
void ReduceEdges(const Axis& w, const WidthTaps& taps, const float* row,
                 float* y) {
  const Range interior = taps.interior;
  for (int64_t t = 0; t < w.kernel; ++t) {
    const int64_t shift = t * w.dilation - w.pad_begin;
    const Range r = taps.At(w, t);
    if (interior.lo == interior.hi) {
      ApplyTap<kMax>(row, w.stride, shift, r.lo, r.hi, y);
      continue;
    }
    ApplyTap<kMax>(row, w.stride, shift, r.lo, std::min(r.hi, interior.lo), y);
    ApplyTap<kMax>(row, w.stride, shift, std::max(r.lo, interior.hi), r.hi, y);
  }
}

// The interior outputs (every tap inside) over `n` input rows, combined in
// registers, four outputs at a time so that their chains overlap:
// y[ow] = the rows' taps combined (with y[ow] unless `first`).
template <bool kMax>
void ReduceInterior(const Axis& w, Range interior, const float* const* rows,
                    int64_t n, bool first, float* y) {
  const float init = kMax ? kNegInf : 0.0f;
  const int64_t s = w.stride;
  int64_t ow = interior.lo;
  for (; ow + 4 <= interior.hi; ow += 4) {
    float v[4];
    for (int i = 0; i < 4; ++i) v[i] = first ? init : y[ow + i];
    for (int64_t r = 0; r < n; ++r) {
      const float* src = rows[r] + (ow * s - w.pad_begin);  // inside the row
      for (int64_t t = 0; t < w.kernel; ++t) {
        const float* tap = src + t * w.dilation;
        for (int i = 0; i < 4; ++i) v[i] = Combine<kMax>(v[i], tap[i * s]);
      }
    }
    for (int i = 0; i < 4; ++i) y[ow + i] = v[i];
  }
  for (; ow < interior.hi; ++ow) {
    float v = first ? init : y[ow];
    for (int64_t r = 0; r < n; ++r)
      for (int64_t t = 0; t < w.kernel; ++t)
        v = Combine<kMax>(v, rows[r][ow * s - w.pad_begin + t * w.dilation]);
    y[ow] = v;
  }
}

// Max (kMax) or sum of one output row over its window's input rows.
template <bool kMax>
void ReduceRow(const Axes& ax, const WidthTaps& taps, const float* plane,
               int64_t od, int64_t oh, float* y) {
  const Axis &d = ax[0], &h = ax[1], &w = ax[2];
  const Window wd = WindowAt(d, od), wh = WindowAt(h, oh);
  const Range interior = taps.interior;
  const float init = kMax ? kNegInf : 0.0f;
  std::fill(y, y + interior.lo, init);
  std::fill(y + interior.hi, y + w.out, init);
  const float* rows[kRowChunk];
  int64_t n = 0;
  bool first = true;
  for (int64_t kd = 0; kd < wd.count; ++kd) {
    const int64_t id = wd.first + kd * d.dilation;
    for (int64_t kh = 0; kh < wh.count; ++kh) {
      const int64_t ih = wh.first + kh * h.dilation;
      rows[n] = plane + (id * h.in + ih) * w.in;
      ReduceEdges<kMax>(w, taps, rows[n], y);
      if (++n == kRowChunk) {
        ReduceInterior<kMax>(w, interior, rows, n, first, y);
        first = false;
        n = 0;
      }
    }
  }
  if (n > 0 || first) ReduceInterior<kMax>(w, interior, rows, n, first, y);
}

void AverageRow(const Axes& ax, const WidthTaps& taps, const float* plane,
                int64_t od, int64_t oh, bool count_include_pad, float* y) {
  ReduceRow<false>(ax, taps, plane, od, oh, y);
  const Axis &d = ax[0], &h = ax[1], &w = ax[2];
  const Window wd = WindowAt(d, od), wh = WindowAt(h, oh);
  const int64_t outer =
      count_include_pad ? wd.padded * wh.padded : wd.count * wh.count;
  const Range interior = taps.interior;
  for (int64_t ow = 0; ow < w.out; ++ow) {
    int64_t inner = w.kernel;  // every tap inside: count == padded == kernel
    if (ow < interior.lo || ow >= interior.hi) {
      const Window ww = WindowAt(w, ow);
      inner = count_include_pad ? ww.padded : ww.count;
    }
    const int64_t divisor = outer * inner;
    y[ow] = divisor > 0 ? y[ow] / static_cast<float>(divisor) : 0.0f;
  }
}

// Channels-last: acc[c] = the max (kMax) or sum of channel c over the
// window of output position (od, oh, ow) in `image` [d, h, w, channels].
template <bool kMax>
void ReducePosition(const Axes& ax, int64_t channels, const float* image,
                    int64_t od, int64_t oh, int64_t ow, float* acc) {
  const Axis &d = ax[0], &h = ax[1], &w = ax[2];
  const Window wd = WindowAt(d, od), wh = WindowAt(h, oh), ww = WindowAt(w, ow);
  std::fill(acc, acc + channels, kMax ? kNegInf : 0.0f);
  for (int64_t kd = 0; kd < wd.count; ++kd) {
    const int64_t id = wd.first + kd * d.dilation;
    for (int64_t kh = 0; kh < wh.count; ++kh) {
      const int64_t ih = wh.first + kh * h.dilation;
      for (int64_t kw = 0; kw < ww.count; ++kw) {
        const int64_t iw = ww.first + kw * w.dilation;
        const float* v = image + ((id * h.in + ih) * w.in + iw) * channels;
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c)
          acc[c] = Combine<kMax>(acc[c], v[c]);
      }
    }
  }
}

// The count an average divides output (od, oh, ow) by (AverageRow's).
int64_t Divisor(const Axes& ax, int64_t od, int64_t oh, int64_t ow,
                bool count_include_pad) {
  const Window wd = WindowAt(ax[0], od), wh = WindowAt(ax[1], oh),
               ww = WindowAt(ax[2], ow);
  return count_include_pad ? wd.padded * wh.padded * ww.padded
                           : wd.count * wh.count * ww.count;
}

int64_t Rows(const PoolGeometry& g, const Axes& ax) {
  return g.planes * ax[0].out * ax[1].out;
}

// Whether a pooling of `rows` rows is worth a parallel region.
bool Parallel(const PoolGeometry& g, int64_t rows) {
  int64_t work = rows * g.out[g.axes - 1];
  for (int a = 0; a < g.axes; ++a) work *= g.kernel[a];
  return rows > 1 && work >= kParallelWork;
}

}  // namespace

void MaxPool(const PoolGeometry& g, const float* x, float* y, int64_t* indices,
             bool column_major) {
  const Axes ax = MakeAxes(g);
  const WidthTaps taps(ax[2]);
  const int64_t rows = Rows(g, ax);
  const int64_t plane_size = ax[0].in * ax[1].in * ax[2].in;
  const int64_t width = ax[2].out;
#pragma omp parallel for if (Parallel(g, rows))
  for (int64_t r = 0; r < rows; ++r) {
    const RowPosition pos = SplitRow(ax, r);
    const float* plane = x + pos.plane * plane_size;
    if (indices == nullptr) {
      ReduceRow<true>(ax, taps, plane, pos.od, pos.oh, y + r * width);
    } else {
      MaxRow(ax, plane, pos.od, pos.oh, column_major, pos.plane * plane_size,
             y + r * width, indices + r * width);
    }
  }
}

void AveragePool(const PoolGeometry& g, const float* x, bool count_include_pad,
                 float* y) {
  const Axes ax = MakeAxes(g);
  const WidthTaps taps(ax[2]);
  const int64_t rows = Rows(g, ax);
  const int64_t plane_size = ax[0].in * ax[1].in * ax[2].in;
  const int64_t width = ax[2].out;
#pragma omp parallel for if (Parallel(g, rows))
  for (int64_t r = 0; r < rows; ++r) {
    const RowPosition pos = SplitRow(ax, r);
    AverageRow(ax, taps, x + pos.plane * plane_size, pos.od, pos.oh,
               count_include_pad, y + r * width);
  }
}

namespace {

template <bool kMax>
void PoolChannelsLast(const PoolGeometry& g, int64_t channels, const float* x,
                      bool count_include_pad, float* y) {
  const Axes ax = MakeAxes(g);
  const int64_t rows = Rows(g, ax);
  const int64_t image_size = ax[0].in * ax[1].in * ax[2].in * channels;
  const int64_t width = ax[2].out;
#pragma omp parallel for if (Parallel(g, rows * channels))
  for (int64_t r = 0; r < rows; ++r) {
    const RowPosition pos = SplitRow(ax, r);
    const float* image = x + pos.plane * image_size;
    for (int64_t ow = 0; ow < width; ++ow) {
      float* out = y + (r * width + ow) * channels;
      ReducePosition<kMax>(ax, channels, image, pos.od, pos.oh, ow, out);
      if (kMax) continue;
      const int64_t divisor =
          Divisor(ax, pos.od, pos.oh, ow, count_include_pad);
      const float scale = divisor > 0 ? 1.0f / static_cast<float>(divisor) : 0;
#pragma omp simd
      for (int64_t c = 0; c < channels; ++c) out[c] *= scale;
    }
  }
}

}  // namespace

void MaxPoolChannelsLast(const PoolGeometry& g, int64_t channels,
                         const float* x, float* y) {
  PoolChannelsLast<true>(g, channels, x, false, y);
}

void AveragePoolChannelsLast(const PoolGeometry& g, int64_t channels,
                             const float* x, bool count_include_pad, float* y) {
  PoolChannelsLast<false>(g, channels, x, count_include_pad, y);
}

void GlobalAveragePoolChannelsLast(const float* x, int64_t batch,
                                   int64_t plane_size, int64_t channels,
                                   float* y) {
  // Sums in double, as GlobalAveragePool does, a block of channels at a
  // time (on the stack) so that each position's channels are read in order.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
#pragma omp parallel for if (batch * blocks > 1 && \
                             batch * channels * plane_size >= kParallelWork)
  for (int64_t task = 0; task < batch * blocks; ++task) {
    const int64_t b = task / blocks, first = task % blocks * kBlock;
    const int64_t n = std::min(kBlock, channels - first);
    const float* image = x + b * plane_size * channels + first;
    double sum[kBlock] = {};
    for (int64_t i = 0; i < plane_size; ++i) {
      const float* v = image + i * channels;
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) sum[c] += v[c];
    }
    for (int64_t c = 0; c < n; ++c)
      y[b * channels + first + c] =
          static_cast<float>(sum[c] / static_cast<double>(plane_size));
  }
}

void GlobalMaxPoolChannelsLast(const float* x, int64_t batch,
                               int64_t plane_size, int64_t channels, float* y) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* image = x + b * plane_size * channels;
    float* out = y + b * channels;
    std::fill(out, out + channels, kNegInf);
    for (int64_t i = 0; i < plane_size; ++i) {
      const float* v = image + i * channels;
#pragma omp simd
      for (int64_t c = 0; c < channels; ++c) out[c] = std::max(out[c], v[c]);
    }
  }
}

void GlobalAveragePool(const float* x, int64_t planes, int64_t plane_size,
                       float* y) {
#pragma omp parallel for if (planes > 1 && planes * plane_size >= kParallelWork)
  for (int64_t p = 0; p < planes; ++p) {
    const float* v = x + p * plane_size;
    double sum = 0.0;
    for (int64_t i = 0; i < plane_size; ++i) sum += v[i];
    y[p] = static_cast<float>(sum / static_cast<double>(plane_size));
  }
}

void GlobalMaxPool(const float* x, int64_t planes, int64_t plane_size,
                   float* y) {
#pragma omp parallel for if (planes > 1 && planes * plane_size >= kParallelWork)
  for (int64_t p = 0; p < planes; ++p) {
    const float* v = x + p * plane_size;
    float best = kNegInf;
    for (int64_t i = 0; i < plane_size; ++i) best = std::max(best, v[i]);
    y[p] = best;
  }
}

}  // namespace coalesce::kernels
