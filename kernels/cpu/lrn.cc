#include "kernels/cpu/lrn.h"

#include <algorithm>
#include <cmath>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 14;

// One [inner] plane of y for channel c of a [channels, inner] batch item.
void LrnPlane(const float* x, int64_t channels, int64_t inner, int64_t c,
              const LrnParams& p, float* y) {
  const int64_t lo = std::max<int64_t>(0, c - (p.size - 1) / 2);
  const int64_t hi = std::min(channels - 1, c + p.size / 2);
  std::fill(y, y + inner, 0.0f);
  for (int64_t k = lo; k <= hi; ++k) {
    const float* v = x + k * inner;
    for (int64_t i = 0; i < inner; ++i) y[i] += v[i] * v[i];
  }
  const float scale = p.alpha / static_cast<float>(p.size);
  const float* v = x + c * inner;
  if (p.beta == 0.75f) {  // the common case: t^-0.75 = 1 / sqrt(t * sqrt(t))
    for (int64_t i = 0; i < inner; ++i) {
      const float t = p.bias + scale * y[i];
      y[i] = v[i] / std::sqrt(t * std::sqrt(t));
    }
    return;
  }
  for (int64_t i = 0; i < inner; ++i)
    y[i] = v[i] * std::pow(p.bias + scale * y[i], -p.beta);
}

}  // namespace

void Lrn(const float* x, int64_t batch, int64_t channels, int64_t inner,
         const LrnParams& params, float* y) {
  const int64_t planes = batch * channels;
  const int64_t work = planes * inner * params.size;
#pragma omp parallel for if (planes > 1 && work >= kParallelElements)
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t n = p / channels, c = p % channels;
    LrnPlane(x + n * channels * inner, channels, inner, c, params,
             y + p * inner);
  }
}

}  // namespace coalesce::kernels
