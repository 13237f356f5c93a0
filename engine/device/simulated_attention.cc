#include "engine/device/simulated_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/device/simulated_floats.h"
#include "kernels/cuda/attention_math.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;

int64_t At(const std::array<int64_t, 4>& s, int64_t b, int64_t h, int64_t r,
           int64_t c) {
  return b * s[0] + h * s[1] + r * s[2] + c * s[3];
}

// How many keys row i of head (b, h) visits (attention_math.h's
// RowKeyEnd, on the mask as stored).
int64_t KeyEnd(const AttentionArgs& a, int64_t b, int64_t h, int64_t i) {
  if (a.mask.data == nullptr) return a.kv_len;
  for (int64_t j = a.kv_len; j-- > 0;) {
    if (!kc::IsMaskedKey(Load(a.mask, At(a.mask_strides, b, h, i, j))))
      return j + 1;
  }
  return a.kv_len;
}

// Row i of head (b, h): its weights exp(score - max) in w (kv_len; 0 past
// the keys the row visits), rounded to float16 for float16 operands as the
// CUDA kernel rounds them before the second product, and their sum (0 when
// every score is -inf).
float Weights(const AttentionArgs& a, int64_t b, int64_t h, int64_t i,
              std::vector<float>& w) {
  float max = -INFINITY;
  const int64_t end = KeyEnd(a, b, h, i);
  std::fill(w.begin() + end, w.end(), -INFINITY);
  for (int64_t j = 0; j < end; ++j) {
    float dot = 0.0f;
    for (int64_t d = 0; d < a.head_dim; ++d)
      dot += Load(a.q, At(a.q_strides, b, h, i, d)) *
             Load(a.k, At(a.k_strides, b, h, j, d));
    w[j] = a.scale * dot;
    if (a.mask.data != nullptr)
      w[j] += Load(a.mask, At(a.mask_strides, b, h, i, j));
    max = kc::MaxScore(max, w[j]);
  }
  float sum = 0.0f;
  for (float& x : w) {
    x = kc::ScoreWeight(x, max);
    x = RoundTo(a.q.type, x);
    sum += x;
  }
  return sum;
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
  const bool zero = kc::ZeroMaskedRows(a.zero_masked_rows, a.kv_len);
  std::vector<float> w(a.kv_len);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) {
        const float sum = Weights(a, b, h, i, w);
        for (int64_t d = 0; d < a.head_dim; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; j < a.kv_len; ++j)
            acc += w[j] * Load(a.v, At(a.v_strides, b, h, j, d));
          Store(a.out, At(a.out_strides, b, h, i, d),
                kc::AttentionOutputValue(acc, sum, zero));
        }
      }
    }
  }
}

}  // namespace coalesce
