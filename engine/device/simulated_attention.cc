#include "engine/device/simulated_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/device/simulated_floats.h"

namespace coalesce {
namespace {

int64_t At(const std::array<int64_t, 4>& s, int64_t b, int64_t h, int64_t r,
           int64_t c) {
  return b * s[0] + h * s[1] + r * s[2] + c * s[3];
}

// Row i of head (b, h): its probabilities in p (kv_len), or false when
// every score is -inf (a fully masked row).
bool Probabilities(const AttentionArgs& a, int64_t b, int64_t h, int64_t i,
                   std::vector<float>& p) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < a.kv_len; ++j) {
    float dot = 0.0f;
    for (int64_t d = 0; d < a.head_dim; ++d)
      dot += Load(a.q, At(a.q_strides, b, h, i, d)) *
             Load(a.k, At(a.k_strides, b, h, j, d));
    float score = a.scale * dot;
    if (a.mask.data != nullptr)
      score += Load(a.mask, At(a.mask_strides, b, h, i, j));
    p[j] = score;
    if (score > max || std::isnan(score)) max = score;
  }
  if (max == -std::numeric_limits<float>::infinity() && a.kv_len > 0)
    return false;  // no keys: the products are empty sums, 0
  float sum = 0.0f;
  for (float& x : p) sum += x = std::exp(x - max);
  for (float& x : p) {
    x /= sum;
    if (a.q.is_half())
      x = kernels::cuda::HalfBitsToFloat(kernels::cuda::FloatToHalfBits(x));
  }
  return true;
}

}  // namespace

int64_t AttentionSpan(const std::array<int64_t, 4>& strides,
                      const std::array<int64_t, 4>& dims) {
  int64_t last = 0;
  for (int d = 0; d < 4; ++d) {
    if (dims[d] == 0) return 0;
    last += (dims[d] - 1) * strides[d];
  }
  return last + 1;
}

void RunSimulatedAttention(const AttentionArgs& a) {
  std::vector<float> p(a.kv_len);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) {
        const bool live = Probabilities(a, b, h, i, p);
        for (int64_t d = 0; d < a.head_dim; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; live && j < a.kv_len; ++j)
            acc += p[j] * Load(a.v, At(a.v_strides, b, h, j, d));
          if (!live)
            acc = a.zero_masked_rows ? 0.0f
                                     : std::numeric_limits<float>::quiet_NaN();
          Store(a.out, At(a.out_strides, b, h, i, d), acc);
        }
      }
    }
  }
}

}  // namespace coalesce
