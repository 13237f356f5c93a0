#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/fast_math.h"

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// Softmax of one contiguous row of length n.
void SoftmaxRow(const float* in, int64_t n, float* out) {
  float max_value = in[0];
#pragma omp simd reduction(max : max_value)
  for (int64_t i = 1; i < n; ++i) max_value = std::max(max_value, in[i]);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    out[i] = FastExp(in[i] - max_value);
    sum += out[i];
  }
  const float scale = 1.0f / sum;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] *= scale;
}

// Softmax of one [axis, inner] block along its first dimension.
void SoftmaxStrided(const float* in, int64_t axis, int64_t inner, float* out) {
  for (int64_t j = 0; j < inner; ++j) {
    float max_value = in[j];
    for (int64_t a = 1; a < axis; ++a) {
      max_value = std::max(max_value, in[a * inner + j]);
    }
    float sum = 0.0f;
    for (int64_t a = 0; a < axis; ++a) {
      const float e = FastExp(in[a * inner + j] - max_value);
      out[a * inner + j] = e;
      sum += e;
    }
    for (int64_t a = 0; a < axis; ++a) out[a * inner + j] /= sum;
  }
}

// Log-softmax of one [axis, inner] block along its first dimension.
void LogSoftmaxBlock(const float* in, int64_t axis, int64_t inner, float* out) {
  for (int64_t j = 0; j < inner; ++j) {
    float max_value = in[j];
    for (int64_t a = 1; a < axis; ++a) {
      max_value = std::max(max_value, in[a * inner + j]);
    }
    float sum = 0.0f;
    for (int64_t a = 0; a < axis; ++a) {
      sum += std::exp(in[a * inner + j] - max_value);
    }
    const float shift = max_value + std::log(sum);
    for (int64_t a = 0; a < axis; ++a) {
      out[a * inner + j] = in[a * inner + j] - shift;
    }
  }
}

}  // namespace

void Softmax(const float* in, int64_t outer, int64_t axis, int64_t inner,
             float* out) {
  if (axis == 0) return;
  const int64_t block = axis * inner;
#pragma omp parallel for if (outer * block >= kParallelElements && outer > 1)
  for (int64_t o = 0; o < outer; ++o) {
    if (inner == 1) {
      SoftmaxRow(in + o * block, axis, out + o * block);
    } else {
      SoftmaxStrided(in + o * block, axis, inner, out + o * block);
    }
  }
}

void LogSoftmax(const float* in, int64_t outer, int64_t axis, int64_t inner,
                float* out) {
  if (axis == 0) return;
  const int64_t block = axis * inner;
#pragma omp parallel for if (outer * block >= kParallelElements && outer > 1)
  for (int64_t o = 0; o < outer; ++o) {
    LogSoftmaxBlock(in + o * block, axis, inner, out + o * block);
  }
}

}  // namespace coalesce::kernels
