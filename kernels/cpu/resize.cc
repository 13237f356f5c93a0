#include "kernels/cpu/resize.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// The input taps of every output position along one axis: `taps` (index,
// weight) pairs per output, indices already clamped into [0, in).
struct AxisTaps {
  int64_t taps = 1;
  std::vector<int64_t> index;    // [out * taps]
  std::vector<float> weight;     // [out * taps]
  std::vector<uint8_t> outside;  // [out]: takes the extrapolation value
};

bool IsIdentity(const ResizeAxis& a, const ResizeOptions& o) {
  const bool full_roi = a.roi_start == 0.0 && a.roi_end == 1.0;
  return a.out == a.in && std::abs(a.scale - 1.0) <= 1e-9 &&
         (o.coordinate != ResizeCoordinate::kTfCropAndResize || full_roi);
}

double SourceCoordinate(const ResizeAxis& a, ResizeCoordinate mode,
                        int64_t out_index) {
  const double y = static_cast<double>(out_index);
  const double length = a.scale * static_cast<double>(a.in);
  const double last = static_cast<double>(a.in - 1);
  switch (mode) {
    case ResizeCoordinate::kHalfPixel:
      return (y + 0.5) / a.scale - 0.5;
    case ResizeCoordinate::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.out) / length;
      const double offset = a.in / 2.0 * (1.0 - adjustment);
      return offset + (y + 0.5) / a.scale - 0.5;
    }
    case ResizeCoordinate::kPytorchHalfPixel:
      return a.out > 1 ? (y + 0.5) / a.scale - 0.5 : 0.0;
    case ResizeCoordinate::kAlignCorners:
      return length == 1.0 ? 0.0 : y * last / (length - 1.0);
    case ResizeCoordinate::kAsymmetric:
      return y / a.scale;
    case ResizeCoordinate::kTfHalfPixelForNn:
      return (y + 0.5) / a.scale;
    case ResizeCoordinate::kTfCropAndResize:
      if (a.out == 1) return (a.roi_start + a.roi_end) / 2.0 * last;
      return a.roi_start * last +
             y * (a.roi_end - a.roi_start) * last / (a.out - 1);
  }
  return 0.0;
}

int64_t NearestIndex(double x, NearestRounding rounding) {
  const double base = std::floor(x);
  const double frac = x - base;
  if (frac == 0.0) return static_cast<int64_t>(base);
  bool up = false;
  switch (rounding) {
    case NearestRounding::kRoundPreferFloor:
      up = frac > 0.5;
      break;
    case NearestRounding::kRoundPreferCeil:
      up = frac >= 0.5;
      break;
    case NearestRounding::kFloor:
      up = false;
      break;
    case NearestRounding::kCeil:
      up = true;
      break;
  }
  return static_cast<int64_t>(base) + (up ? 1 : 0);
}

// Keys' cubic convolution kernel at distance |t|.
double CubicKernel(double t, double a) {
  t = std::abs(t);
  if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
  return 0.0;
}

// Filter geometry of linear or cubic: taps start at floor(x) + first, and
// the kernel is evaluated at (offset - ratio) * stretch.
struct Filter {
  int64_t first = 0;
  int64_t taps = 2;
  double stretch = 1.0;
};

Filter MakeFilter(const ResizeAxis& a, const ResizeOptions& o) {
  Filter f;
  const double support = o.mode == ResizeMode::kCubic ? 2.0 : 1.0;
  f.stretch = o.antialias ? std::min(a.scale, 1.0) : 1.0;
  f.first = static_cast<int64_t>(std::floor(-support / f.stretch)) + 1;
  f.taps = 2 - 2 * f.first;
  return f;
}

// Linear or cubic taps of one output at input coordinate x, written to
// index[0, taps) and weight[0, taps).
void FilterTaps(double x, const ResizeAxis& a, const ResizeOptions& o,
                const Filter& f, int64_t* index, float* weight) {
  // Prefer the left neighbour: an integral x has ratio 1 from x - 1.
  double base = std::floor(x);
  double ratio = x - base;
  if (ratio == 0.0) base -= 1.0, ratio = 1.0;
  std::vector<double> w(f.taps);
  double sum = 0.0, inside_sum = 0.0;
  const int64_t taps = f.taps;
  for (int64_t k = 0; k < taps; ++k) {
    const double t = (static_cast<double>(f.first + k) - ratio) * f.stretch;
    w[k] = o.mode == ResizeMode::kCubic ? CubicKernel(t, o.cubic_coeff_a)
                                        : std::max(0.0, 1.0 - std::abs(t));
    const int64_t i = static_cast<int64_t>(base) + f.first + k;
    index[k] = std::clamp<int64_t>(i, 0, a.in - 1);
    sum += w[k];
    if (o.exclude_outside && (i < 0 || i >= a.in)) w[k] = 0.0;
    inside_sum += w[k];
  }
  double norm = o.antialias ? sum : 1.0;
  if (o.exclude_outside) norm = inside_sum;
  if (norm == 0.0) norm = 1.0;
  for (int64_t k = 0; k < taps; ++k)
    weight[k] = static_cast<float>(w[k] / norm);
}

// Reduces an axis whose every output has one full-weight tap to one tap.
void CompressSingleTaps(AxisTaps& t) {
  if (t.taps == 1) return;
  const int64_t out = static_cast<int64_t>(t.outside.size());
  std::vector<int64_t> index(out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t found = -1;
    for (int64_t k = 0; k < t.taps; ++k) {
      const float w = t.weight[o * t.taps + k];
      if (w == 1.0f && found < 0) {
        found = t.index[o * t.taps + k];
      } else if (w != 0.0f) {
        return;
      }
    }
    index[o] = found < 0 ? 0 : found;
  }
  t.taps = 1;
  t.index = std::move(index);
  t.weight.assign(out, 1.0f);
}

AxisTaps BuildAxis(const ResizeAxis& a, const ResizeOptions& o) {
  AxisTaps t;
  t.outside.assign(a.out, 0);
  if (IsIdentity(a, o)) {
    for (int64_t i = 0; i < a.out; ++i) t.index.push_back(i);
    t.weight.assign(a.out, 1.0f);
    return t;
  }
  const Filter f = MakeFilter(a, o);
  t.taps = o.mode == ResizeMode::kNearest ? 1 : f.taps;
  t.index.assign(a.out * t.taps, 0);
  t.weight.assign(a.out * t.taps, 0.0f);
  for (int64_t i = 0; i < a.out; ++i) {
    const double x = SourceCoordinate(a, o.coordinate, i);
    if (o.coordinate == ResizeCoordinate::kTfCropAndResize &&
        (x < 0.0 || x > static_cast<double>(a.in - 1))) {
      t.outside[i] = 1;
    } else if (o.mode == ResizeMode::kNearest) {
      t.index[i] = std::clamp<int64_t>(NearestIndex(x, o.nearest), 0, a.in - 1);
      t.weight[i] = 1.0f;
    } else {
      FilterTaps(x, a, o, f, &t.index[i * t.taps], &t.weight[i * t.taps]);
    }
  }
  CompressSingleTaps(t);
  return t;
}

// row[w] = sum_k weight * in[index] along the last axis.
void InterpolateRow(const float* in, const AxisTaps& t, float* row) {
  const int64_t width = static_cast<int64_t>(t.outside.size());
  const int64_t n = t.taps;
  const int64_t* index = t.index.data();
  const float* weight = t.weight.data();
  if (n == 2) {
    for (int64_t w = 0; w < width; ++w)
      row[w] = weight[2 * w] * in[index[2 * w]] +
               weight[2 * w + 1] * in[index[2 * w + 1]];
    return;
  }
  for (int64_t w = 0; w < width; ++w) {
    float v = 0.0f;
    for (int64_t k = 0; k < n; ++k)
      v += weight[w * n + k] * in[index[w * n + k]];
    row[w] = v;
  }
}

// Input rows interpolated along the last axis, kept by one thread so that
// the consecutive output rows it computes reuse the input rows they share.
// Lives in caller-provided memory: `slots` keys and slots * width floats.
class RowCache {
 public:
  RowCache(int64_t* keys, float* rows, size_t slots, int64_t width)
      : keys_(keys), rows_(rows), slots_(slots), width_(width) {
    std::fill(keys_, keys_ + slots_, -1);
  }

  // The input row at `offset` interpolated along the last axis.
  const float* Get(const float* x, int64_t offset, const AxisTaps& last) {
    for (size_t i = 0; i < slots_; ++i)
      if (keys_[i] == offset) return rows_ + i * width_;
    const size_t slot = next_;
    next_ = (next_ + 1) % slots_;
    keys_[slot] = offset;
    float* row = rows_ + slot * width_;
    InterpolateRow(x + offset, last, row);
    return row;
  }

 private:
  int64_t* keys_;
  float* rows_;
  size_t slots_;
  int64_t width_;
  size_t next_ = 0;
};

// The resize state shared by every row.
struct Plan {
  std::vector<AxisTaps> axes;
  std::vector<int64_t> in_strides;
  std::vector<int64_t> out_dims;
  int64_t rows = 0;          // output rows: all axes but the last
  int64_t combinations = 1;  // of the outer axes' taps, per output row
  bool gather_last = false;  // the last axis has one tap of weight 1
  size_t cache_slots = 0;    // rows of RowCache per thread (0: gathering)
  float extrapolation_value = 0.0f;
};

// One thread's working state, in its part of the scratch memory: coord and
// digit (rank each), then the row cache's keys and rows.
struct RowScratch {
  RowScratch(const Plan& p, char* memory)
      : coord(reinterpret_cast<int64_t*>(memory)),
        digit(coord + p.axes.size()),
        cache(digit + p.axes.size(),
              reinterpret_cast<float*>(digit + p.axes.size() + p.cache_slots),
              p.cache_slots, p.out_dims.back()) {}
  int64_t* coord;
  int64_t* digit;
  RowCache cache;
  int64_t previous_offset = -1;  // of the last single-row gather
  const float* previous_out = nullptr;
};

size_t ThreadScratchBytes(const Plan& p) {
  const size_t bytes = (2 * p.axes.size() + p.cache_slots) * sizeof(int64_t) +
                       p.cache_slots * p.out_dims.back() * sizeof(float);
  return (bytes + 63) / 64 * 64;
}

// out (=, or += when `accumulate`) scale * in[index] along the last axis.
void GatherRow(const float* in, float scale, const AxisTaps& t, bool accumulate,
               float* out) {
  const int64_t width = static_cast<int64_t>(t.outside.size());
  const int64_t* index = t.index.data();
  if (!accumulate && scale == 1.0f) {
    for (int64_t w = 0; w < width; ++w) out[w] = in[index[w]];
  } else if (!accumulate) {
    for (int64_t w = 0; w < width; ++w) out[w] = scale * in[index[w]];
  } else {
    for (int64_t w = 0; w < width; ++w) out[w] += scale * in[index[w]];
  }
}

// Adds (or writes) one input row's contribution, `weight` times it.
void AddInputRow(const Plan& p, const float* x, int64_t offset, float weight,
                 bool accumulate, RowScratch& s, float* out) {
  const int64_t width = p.out_dims.back();
  if (p.gather_last) {
    const bool copy = p.combinations == 1 && weight == 1.0f;
    if (copy && offset == s.previous_offset) {
      std::copy(s.previous_out, s.previous_out + width, out);
    } else {
      GatherRow(x + offset, weight, p.axes.back(), accumulate, out);
    }
    s.previous_offset = copy ? offset : -1;
    s.previous_out = out;
    return;
  }
  const float* row = s.cache.Get(x, offset, p.axes.back());
  if (accumulate) {
    for (int64_t w = 0; w < width; ++w) out[w] += weight * row[w];
  } else {
    for (int64_t w = 0; w < width; ++w) out[w] = weight * row[w];
  }
}

// Output row `row` (an index over all axes but the last): a weighted sum of
// input rows, one per combination of the outer axes' taps.
void ResizeRow(const Plan& p, const float* x, int64_t row, RowScratch& s,
               float* out) {
  const size_t outer = p.axes.size() - 1;
  const AxisTaps& last = p.axes.back();
  const int64_t width = p.out_dims.back();
  bool outside = false;
  for (size_t a = outer; a-- > 0;) {
    s.coord[a] = row % p.out_dims[a];
    row /= p.out_dims[a];
    outside = outside || p.axes[a].outside[s.coord[a]];
    s.digit[a] = 0;
  }
  if (outside) {
    std::fill(out, out + width, p.extrapolation_value);
    s.previous_offset = -1;
    return;
  }
  bool written = false;
  for (;;) {
    int64_t offset = 0;
    float weight = 1.0f;
    for (size_t a = 0; a < outer; ++a) {
      const int64_t k = s.coord[a] * p.axes[a].taps + s.digit[a];
      offset += p.axes[a].index[k] * p.in_strides[a];
      weight *= p.axes[a].weight[k];
    }
    if (weight != 0.0f) {
      AddInputRow(p, x, offset, weight, written, s, out);
      written = true;
    }
    size_t a = outer;
    while (a > 0 && ++s.digit[a - 1] == p.axes[a - 1].taps) s.digit[--a] = 0;
    if (a == 0) break;
  }
  if (!written) std::fill(out, out + width, 0.0f);
  for (int64_t w = 0; w < width; ++w)
    if (last.outside[w]) out[w] = p.extrapolation_value;
}

}  // namespace

struct ResizePlan::Impl {
  Plan plan;
  int max_threads = 1;
  size_t thread_bytes = 0;
};

ResizePlan::ResizePlan(const std::vector<ResizeAxis>& axes,
                       const ResizeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Plan& p = impl_->plan;
  p.extrapolation_value = options.extrapolation_value;
  if (axes.empty()) return;
  p.in_strides.assign(axes.size(), 1);
  p.rows = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    p.axes.push_back(BuildAxis(axes[a], options));
    p.out_dims.push_back(axes[a].out);
    if (a + 1 == axes.size()) break;
    p.rows *= axes[a].out;
    p.combinations *= p.axes[a].taps;
  }
  for (size_t a = axes.size() - 1; a-- > 0;)
    p.in_strides[a] = p.in_strides[a + 1] * axes[a + 1].in;
  const AxisTaps& last = p.axes.back();
  p.gather_last =
      last.taps == 1 && std::all_of(last.weight.begin(), last.weight.end(),
                                    [](float w) { return w == 1.0f; });
  p.cache_slots =
      p.gather_last ? 0 : std::clamp<int64_t>(2 * p.combinations, 2, 16);
  impl_->max_threads = std::max(1, omp_get_num_procs());
  impl_->thread_bytes = ThreadScratchBytes(p);
}

ResizePlan::~ResizePlan() = default;
ResizePlan::ResizePlan(ResizePlan&&) noexcept = default;
ResizePlan& ResizePlan::operator=(ResizePlan&&) noexcept = default;

size_t ResizePlan::scratch_bytes() const {
  return impl_->max_threads * impl_->thread_bytes;
}

void ResizePlan::Run(const float* x, float* y, void* scratch) const {
  const Plan& p = impl_->plan;
  if (p.axes.empty()) {
    y[0] = x[0];
    return;
  }
  const int64_t width = p.out_dims.back();
  if (p.rows == 0 || width == 0) return;
  const bool parallel = p.rows > 1 && p.rows * width >= kParallelElements;
  const int threads = std::min(omp_get_max_threads(), impl_->max_threads);
  char* memory = static_cast<char*>(scratch);
#pragma omp parallel if (parallel) num_threads(threads)
  {
    RowScratch rs(p, memory + omp_get_thread_num() * impl_->thread_bytes);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.rows; ++r) ResizeRow(p, x, r, rs, y + r * width);
  }
}

void Resize(const float* x, const std::vector<ResizeAxis>& axes,
            const ResizeOptions& options, float* y) {
  const ResizePlan plan(axes, options);
  std::vector<int64_t> scratch((plan.scratch_bytes() + 7) / 8);
  plan.Run(x, y, scratch.data());
}

}  // namespace coalesce::kernels
