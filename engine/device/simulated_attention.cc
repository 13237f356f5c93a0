#include "engine/device/simulated_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/device/simulated_floats.h"
#include "engine/packing_indices.h"
#include "kernels/cuda/attention_math.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;

// Batch entry b's rows: padded, q_len queries and kv_len keys at the
// batch stride; packed, `rows` rows of the views from row `first` on, the
// mask read at their positions.
struct Entry {
  int64_t b = 0, first = 0, queries = 0, keys = 0;
  const int64_t* positions = nullptr;  // by packed row; null: padded
};

int64_t At(const std::array<int64_t, 4>& s, const Entry& e, int64_t h,
           int64_t r, int64_t c) {
  if (e.positions != nullptr) return (e.first + r) * s[2] + h * s[1] + c * s[3];
  return e.b * s[0] + h * s[1] + r * s[2] + c * s[3];
}

float MaskAt(const AttentionArgs& a, const Entry& e, int64_t h, int64_t i,
             int64_t j) {
  const std::array<int64_t, 4>& s = a.mask_strides;
  if (e.positions != nullptr) {
    i = e.positions[e.first + i];
    j = e.positions[e.first + j];
  }
  return Load(a.mask, e.b * s[0] + h * s[1] + i * s[2] + j * s[3]);
}

// How many keys row i of head h visits: attention_math.h's RowKeyEnd on
// the mask as stored (at the rows' positions when packed).
int64_t KeyEnd(const AttentionArgs& a, const Entry& e, int64_t h, int64_t i) {
  if (a.mask.data == nullptr) return e.keys;
  for (int64_t j = e.keys; j-- > 0;) {
    if (!kc::IsMaskedKey(MaskAt(a, e, h, i, j))) return j + 1;
  }
  return e.keys;
}

// Row i of head h: its weights exp(score - max) in w (0 past the keys the
// row visits), rounded to float16 for float16 operands as the CUDA kernel
// rounds them before the second product, and their sum (0 when every
// score is -inf).
float Weights(const AttentionArgs& a, const Entry& e, int64_t h, int64_t i,
              std::vector<float>& w) {
  float max = -INFINITY;
  const int64_t end = KeyEnd(a, e, h, i);
  w.assign(e.keys, -INFINITY);
  for (int64_t j = 0; j < end; ++j) {
    float dot = 0.0f;
    for (int64_t d = 0; d < a.head_dim; ++d)
      dot += Load(a.q, At(a.q_strides, e, h, i, d)) *
             Load(a.k, At(a.k_strides, e, h, j, d));
    w[j] = a.scale * dot;
    if (a.mask.data != nullptr) w[j] += MaskAt(a, e, h, i, j);
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

void AttendEntry(const AttentionArgs& a, const Entry& e, bool zero) {
  std::vector<float> w;
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t i = 0; i < e.queries; ++i) {
      const float sum = Weights(a, e, h, i, w);
      for (int64_t d = 0; d < a.head_dim; ++d) {
        float acc = 0.0f;
        for (int64_t j = 0; j < e.keys; ++j)
          acc += w[j] * Load(a.v, At(a.v_strides, e, h, j, d));
        Store(a.out, At(a.out_strides, e, h, i, d),
              kc::AttentionOutputValue(acc, sum, zero));
      }
    }
  }
}

// Packed rows: each entry over its real rows, then zeros in the fillers'.
void AttendPacked(const AttentionArgs& a, bool zero) {
  std::vector<int64_t> offsets(a.batch + 1), positions(a.packed_rows);
  const int64_t real = PackedRealRows(a.pack, a.packed_rows, a.batch, a.q_len,
                                      offsets.data(), positions.data());
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t rows = offsets[b + 1] - offsets[b];
    AttendEntry(a,
                {.b = b,
                 .first = offsets[b],
                 .queries = rows,
                 .keys = rows,
                 .positions = positions.data()},
                zero);
  }
  for (int64_t r = real; r < a.packed_rows; ++r) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t d = 0; d < a.head_dim; ++d)
        Store(
            a.out,
            r * a.out_strides[2] + h * a.out_strides[1] + d * a.out_strides[3],
            0.0f);
    }
  }
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
  if (a.pack != nullptr) {
    AttendPacked(a, zero);
    return;
  }
  for (int64_t b = 0; b < a.batch; ++b)
    AttendEntry(a, {.b = b, .queries = a.q_len, .keys = a.kv_len}, zero);
}

}  // namespace coalesce
