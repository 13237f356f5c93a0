#include "kernels/cpu/activation.h"

#include <cmath>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

}  // namespace

void Relu(const float* in, int64_t n, float* out) {
#pragma omp parallel for simd if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void Sigmoid(const float* in, int64_t n, float* out) {
#pragma omp parallel for if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    // Split by sign so exp never overflows.
    const float x = in[i];
    if (x >= 0.0f) {
      out[i] = 1.0f / (1.0f + std::exp(-x));
    } else {
      const float e = std::exp(x);
      out[i] = e / (1.0f + e);
    }
  }
}

void Tanh(const float* in, int64_t n, float* out) {
#pragma omp parallel for if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) out[i] = std::tanh(in[i]);
}

}  // namespace coalesce::kernels
