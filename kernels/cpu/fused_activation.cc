#include "kernels/cpu/fused_activation.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/unary_math.h"

namespace coalesce::kernels {

void ApplyFusedActivation(const FusedActivation& act, float* data, int64_t n) {
  using Kind = FusedActivation::Kind;
  switch (act.kind) {
    case Kind::kNone:
      return;
    case Kind::kRelu:
      Relu(data, n, data);
      return;
    case Kind::kSigmoid:
      Sigmoid(data, n, data);
      return;
    case Kind::kTanh:
      Tanh(data, n, data);
      return;
    case Kind::kLeakyRelu: {
      const float alpha = act.alpha;
#pragma omp parallel for simd if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        data[i] = data[i] < 0.0f ? alpha * data[i] : data[i];
      return;
    }
    case Kind::kClip: {
      const float lo = act.alpha, hi = act.beta;
#pragma omp parallel for simd if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        data[i] = std::min(std::max(data[i], lo), hi);
      return;
    }
    case Kind::kSilu: {
      const float scale = act.alpha;
#pragma omp parallel for simd if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        data[i] = data[i] / (1.0f + std::exp(-scale * data[i]));
      return;
    }
    case Kind::kHardSwish:
#pragma omp parallel for simd if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        data[i] *= std::min(std::max(data[i] / 6.0f + 0.5f, 0.0f), 1.0f);
      return;
    case Kind::kGeluErf:
      Unary(UnaryOp::kGelu, {}, data, n, data);
      return;
    case Kind::kGeluTanh:
      Unary(UnaryOp::kGeluTanh, {}, data, n, data);
      return;
    case Kind::kHardSigmoid: {
      const float alpha = act.alpha, beta = act.beta;
#pragma omp parallel for simd if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        data[i] = std::min(std::max(alpha * data[i] + beta, 0.0f), 1.0f);
      return;
    }
  }
}

}  // namespace coalesce::kernels
