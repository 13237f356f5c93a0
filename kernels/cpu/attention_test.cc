// The CPU attention kernel against attention computed term by term in
// double precision (softmax over every key, nothing skipped), on strided
// views as exports give them: Q, K and V heads interleaved in one projection
// row, a key padding mask, a causal one, rows that mask every key.
#include "kernels/cpu/attention.h"

#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/threading.h"

namespace coalesce::kernels {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

int64_t At(const std::array<int64_t, 4>& s, int64_t b, int64_t h, int64_t i,
           int64_t j) {
  return b * s[0] + h * s[1] + i * s[2] + j * s[3];
}

// out[b, h, i, :] term by term, every key included.
std::vector<double> Reference(const AttentionViews& a) {
  std::vector<double> out(a.batch * a.heads * a.q_len * a.head_dim);
  std::vector<double> w(a.kv_len);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t i = 0; i < a.q_len; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < a.head_dim; ++d)
            dot += double{a.q[At(a.q_strides, b, h, i, d)]} *
                   a.k[At(a.k_strides, b, h, j, d)];
          w[j] = a.scale * dot +
                 (a.mask ? a.mask[At(a.mask_strides, b, h, i, j)] : 0.0);
          max = std::max(max, w[j]);
        }
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - max));
        for (int64_t d = 0; d < a.head_dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < a.kv_len; ++j)
            acc += w[j] * a.v[At(a.v_strides, b, h, j, d)];
          const double value =
              max == -INFINITY ? (a.zero_masked_rows ? 0.0 : NAN) : acc / sum;
          out[((b * a.heads + h) * a.q_len + i) * a.head_dim + d] = value;
        }
      }
  return out;
}

// Attention(a) on a thread of its own limited to `threads` OpenMP threads.
absl::Status RunOnThreads(const AttentionViews& a, std::vector<float>& scratch,
                          int threads) {
  absl::Status s;
  std::thread t([&] {
    SetIntraOpThreads(threads);
    s = Attention(a, scratch.data(), threads);
  });
  t.join();
  return s;
}

struct Case {
  int64_t batch = 2, heads = 3, seq = 37, head_dim = 16;
  std::vector<int64_t> lengths = {37, 11};  // key padding mask; empty: none
  bool causal = false;
  float fill = kLowest;  // the masked keys' value
  bool zero_masked_rows = false;
};

// q, k and v are the thirds of one [B, S, 3 * H * D] projection; out is
// [B, S, H * D] (the head merge); the mask [B, 1, 1 or S, S].
void ExpectMatchesReference(const Case& c, int threads) {
  const int64_t e = c.heads * c.head_dim, rows = c.batch * c.seq;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> qkv(rows * 3 * e), out(rows * e, NAN);
  for (float& x : qkv) x = dist(gen);
  const int64_t mask_rows = c.causal ? c.seq : 1;
  std::vector<float> mask(c.batch * mask_rows * c.seq, 0.0f);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < mask_rows; ++i)
      for (int64_t j = 0; j < c.seq; ++j) {
        const bool padded = !c.lengths.empty() && j >= c.lengths[b];
        if (padded || (c.causal && j > i))
          mask[(b * mask_rows + i) * c.seq + j] = c.fill;
      }
  AttentionViews a;
  a.batch = c.batch;
  a.heads = c.heads;
  a.q_len = a.kv_len = c.seq;
  a.head_dim = c.head_dim;
  const std::array<int64_t, 4> in_strides = {c.seq * 3 * e, c.head_dim, 3 * e,
                                             1};
  a.q = qkv.data();
  a.k = qkv.data() + e;
  a.v = qkv.data() + 2 * e;
  a.q_strides = a.k_strides = a.v_strides = in_strides;
  a.mask = mask.data();
  a.mask_strides = {mask_rows * c.seq, 0, c.causal ? c.seq : 0, 1};
  a.out = out.data();
  a.out_strides = {c.seq * e, c.head_dim, e, 1};
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.zero_masked_rows = c.zero_masked_rows;
  ASSERT_TRUE(AttentionTakes(a));
  const std::vector<double> want = Reference(a);
  std::vector<float> scratch(AttentionScratchBytes(c.seq, c.seq, threads) /
                             sizeof(float));
  const absl::Status s = RunOnThreads(a, scratch, threads);
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.seq; ++i)
        for (int64_t d = 0; d < c.head_dim; ++d) {
          const double w =
              want[((b * c.heads + h) * c.seq + i) * c.head_dim + d];
          const float got = out[At(a.out_strides, b, h, i, d)];
          if (std::isnan(w)) {
            ASSERT_TRUE(std::isnan(got)) << b << " " << h << " " << i;
          } else {
            ASSERT_NEAR(got, w, 1e-5) << b << " " << h << " " << i << " " << d;
          }
        }
}

// Packed rows (token packing): the real rows of a batch with left padding,
// a hole and an entry with no real row, one after the other, read by
// offsets and positions, against the padded batch's reference at each real
// row's position. The mask is read by position: [B, 1, 1, S] with a finite
// value at one real key too, or [B, 1, S, S] with a value of its own for
// every (query, key) (each row's, as T5's position bias or a causal mask).
void ExpectPackedRowsMatch(bool per_row_mask, int threads) {
  const int64_t batch = 3, heads = 2, seq = 9, head_dim = 16;
  const int64_t e = heads * head_dim, mask_rows = per_row_mask ? seq : 1;
  const std::vector<std::vector<int>> real = {{0, 0, 1, 1, 1, 1, 1, 1, 1},
                                              {1, 1, 0, 0, 1, 0, 1, 1, 0},
                                              {0, 0, 0, 0, 0, 0, 0, 0, 0}};
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> padded(batch * seq * 3 * e);
  std::vector<float> mask(batch * mask_rows * seq, 0.0f);
  for (float& x : padded) x = dist(gen);
  std::vector<float> packed;
  std::vector<int64_t> offsets = {0}, positions;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < seq; ++j) {
      for (int64_t i = 0; i < mask_rows; ++i) {
        float& m = mask[(b * mask_rows + i) * seq + j];
        m = !real[b][j] ? kLowest : per_row_mask ? dist(gen) : 0.0f;
      }
      if (!real[b][j]) continue;
      const float* row = padded.data() + (b * seq + j) * 3 * e;
      packed.insert(packed.end(), row, row + 3 * e);
      positions.push_back(j);
    }
    offsets.push_back(static_cast<int64_t>(positions.size()));
  }
  if (!per_row_mask) mask[4] = 0.5f;  // entry 0, a real key
  AttentionViews a;
  a.batch = batch;
  a.heads = heads;
  a.q_len = a.kv_len = seq;
  a.head_dim = head_dim;
  a.q = padded.data();
  a.k = padded.data() + e;
  a.v = padded.data() + 2 * e;
  a.q_strides = a.k_strides = a.v_strides = {seq * 3 * e, head_dim, 3 * e, 1};
  a.mask = mask.data();
  a.mask_strides = {mask_rows * seq, 0, per_row_mask ? seq : 0, 1};
  a.scale = 0.25f;
  const std::vector<double> want = Reference(a);
  std::vector<float> out(positions.size() * e, NAN);
  a.q = packed.data();
  a.k = packed.data() + e;
  a.v = packed.data() + 2 * e;
  a.out = out.data();
  a.out_strides = {0, head_dim, e, 1};
  a.offsets = offsets.data();
  a.positions = positions.data();
  std::vector<float> scratch(AttentionScratchBytes(seq, seq, threads) /
                             sizeof(float));
  const absl::Status s = RunOnThreads(a, scratch, threads);
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = offsets[b]; r < offsets[b + 1]; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < head_dim; ++d) {
          const double w =
              want[((b * heads + h) * seq + positions[r]) * head_dim + d];
          ASSERT_NEAR(out[r * e + h * head_dim + d], w, 1e-5)
              << b << " " << r << " " << h << " " << d;
        }
}

TEST(CpuAttentionTest, PackedRowsMatchThePaddedBatch) {
  ExpectPackedRowsMatch(/*per_row_mask=*/false, 1);
  ExpectPackedRowsMatch(/*per_row_mask=*/true, 2);
}

TEST(CpuAttentionTest, PaddedKeysOnOneAndTwoThreads) {
  ExpectMatchesReference({}, 1);
  ExpectMatchesReference({}, 2);
}

TEST(CpuAttentionTest, NoMaskAndHeadDimensionsOfExports) {
  ExpectMatchesReference({.lengths = {}}, 2);
  ExpectMatchesReference({.heads = 2, .head_dim = 64, .lengths = {37, 1}}, 2);
  ExpectMatchesReference({.heads = 1, .head_dim = 1, .lengths = {5, 37}}, 2);
}

TEST(CpuAttentionTest, CausalMaskWithPadding) {
  ExpectMatchesReference({.causal = true}, 2);
}

// -10000 (old exports' mask) is not skipped, and must still match.
TEST(CpuAttentionTest, FiniteMaskValuesAreComputedNotSkipped) {
  ExpectMatchesReference({.fill = -10000.0f}, 2);
}

// A row masked with -inf everywhere: NaN, or 0 with PyTorch's guard; the
// other rows as usual.
TEST(CpuAttentionTest, RowsMaskingEveryKey) {
  ExpectMatchesReference({.lengths = {37, 0}, .fill = -INFINITY}, 2);
  ExpectMatchesReference(
      {.lengths = {0, 20}, .fill = -INFINITY, .zero_masked_rows = true}, 2);
  ExpectMatchesReference({.lengths = {0, 20}, .fill = kLowest}, 2);
}

TEST(CpuAttentionTest, TakesOnlyContiguousHeads) {
  AttentionViews a;
  a.head_dim = 8;
  a.q_strides = a.k_strides = a.v_strides = a.out_strides = {0, 8, 8, 1};
  EXPECT_TRUE(AttentionTakes(a));
  a.k_strides = {0, 1, 1, 8};  // K transposed in memory
  EXPECT_FALSE(AttentionTakes(a));
  a.k_strides = {0, 8, 4, 1};  // rows overlapping
  EXPECT_FALSE(AttentionTakes(a));
}

}  // namespace
}  // namespace coalesce::kernels
