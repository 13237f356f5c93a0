#include "kernels/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"
#include "kernels/cuda/attention_math.h"

namespace coalesce::kernels {
namespace {

// Floats of one thread's scratch: a head's weights and its rows' sums.
int64_t ThreadFloats(int64_t q_len, int64_t kv_len) {
  return q_len * std::max<int64_t>(kv_len, 1) + q_len;
}

// The keys head (b, h) visits: up to the last key one of its rows does not
// mask; every key when a row masks them all.
int64_t HeadKeyEnd(const AttentionViews& a, int64_t b, int64_t h) {
  if (a.mask == nullptr) return a.kv_len;
  const std::array<int64_t, 4>& s = a.mask_strides;
  const float* m = a.mask + b * s[0] + h * s[1];
  const int64_t rows = s[2] == 0 ? std::min<int64_t>(a.q_len, 1) : a.q_len;
  int64_t end = 0;
  for (int64_t i = 0; i < rows && end < a.kv_len; ++i)
    end = std::max(end, cuda::RowKeyEnd(m + i * s[2], s[3], a.kv_len));
  return end;
}

// Row i's scores (n of them) become exp(score + mask - max); its sum, 0 when
// every score is -inf (the row then holds zeros). Key j's mask column is
// cols[j] when cols is set (packed rows), else j.
float RowWeights(float* row, int64_t n, const float* mask, int64_t mask_stride,
                 const int64_t* cols) {
  if (mask != nullptr && cols != nullptr) {
    for (int64_t j = 0; j < n; ++j) row[j] += mask[cols[j] * mask_stride];
  } else if (mask != nullptr) {
    for (int64_t j = 0; j < n; ++j) row[j] += mask[j * mask_stride];
  }
  float max = -INFINITY;
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < n; ++j) max = std::max(max, row[j]);
  if (max == -INFINITY) {
    std::fill(row, row + n, 0.0f);
    return 0.0f;
  }
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    row[j] = FastExp(row[j] - max);
    sum += row[j];
  }
  return sum;
}

// Head (b, h), its weights and sums in `w`.
absl::Status Head(const AttentionViews& a, int64_t b, int64_t h, float* w) {
  // Packed rows: entry b's rows from offsets[b], all of them real.
  const int64_t first = a.offsets != nullptr ? a.offsets[b] : 0;
  const int64_t q_len =
      a.offsets != nullptr ? a.offsets[b + 1] - first : a.q_len;
  const int64_t end = a.offsets != nullptr ? q_len : HeadKeyEnd(a, b, h);
  const int64_t* positions =
      a.offsets != nullptr ? a.positions + first : nullptr;
  const auto at = [&](const std::array<int64_t, 4>& s) {
    return (a.offsets != nullptr ? first * s[2] : b * s[0]) + h * s[1];
  };
  const float* q = a.q + at(a.q_strides);
  const float* k = a.k + at(a.k_strides);
  const float* v = a.v + at(a.v_strides);
  float* out = a.out + at(a.out_strides);
  if (q_len == 0) return absl::OkStatus();
  const int64_t ld = std::max<int64_t>(end, 1);
  absl::Status s = Sgemm({.trans_b = true,
                          .m = q_len,
                          .n = end,
                          .k = a.head_dim,
                          .alpha = a.scale,
                          .lda = a.q_strides[2],
                          .ldb = a.k_strides[2],
                          .ldc = ld},
                         q, k, w);
  if (!s.ok()) return s;
  float* sums = w + a.q_len * std::max<int64_t>(a.kv_len, 1);
  const float* mask = a.mask == nullptr ? nullptr
                                        : a.mask + b * a.mask_strides[0] +
                                              h * a.mask_strides[1];
  for (int64_t i = 0; i < q_len; ++i) {
    const int64_t row = positions != nullptr ? positions[i] : i;
    sums[i] =
        RowWeights(w + i * ld, end,
                   mask == nullptr ? nullptr : mask + row * a.mask_strides[2],
                   a.mask_strides[3], positions);
  }
  s = Sgemm({.m = q_len,
             .n = a.head_dim,
             .k = end,
             .lda = ld,
             .ldb = a.v_strides[2],
             .ldc = a.out_strides[2]},
            w, v, out);
  if (!s.ok()) return s;
  const bool zero = cuda::ZeroMaskedRows(a.zero_masked_rows, a.kv_len);
  for (int64_t i = 0; i < q_len; ++i) {
    float* row = out + i * a.out_strides[2];
    for (int64_t d = 0; d < a.head_dim; ++d)
      row[d] = cuda::AttentionOutputValue(row[d], sums[i], zero);
  }
  return absl::OkStatus();
}

}  // namespace

bool AttentionTakes(const AttentionViews& a) {
  for (const std::array<int64_t, 4>* s :
       {&a.q_strides, &a.k_strides, &a.v_strides, &a.out_strides}) {
    if (a.head_dim > 1 && (*s)[3] != 1) return false;
    if ((*s)[2] < a.head_dim) return false;
  }
  return true;
}

size_t AttentionScratchBytes(int64_t q_len, int64_t kv_len, int threads) {
  return static_cast<size_t>(ThreadFloats(q_len, kv_len)) * sizeof(float) *
         std::max(threads, 1);
}

absl::Status Attention(const AttentionViews& a, float* scratch,
                       int scratch_threads) {
  const int64_t heads = a.batch * a.heads;
  const int threads = std::max(1, std::min(scratch_threads, IntraOpThreads()));
  const int64_t per_thread = ThreadFloats(a.q_len, a.kv_len);
  std::atomic<bool> failed{false};
  absl::Status first_error;
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (threads > 1 && heads > 1)
  for (int64_t bh = 0; bh < heads; ++bh) {
    if (failed.load(std::memory_order_relaxed)) continue;
    float* w = scratch + omp_get_thread_num() * per_thread;
    absl::Status s = Head(a, bh / a.heads, bh % a.heads, w);
    if (!s.ok() && !failed.exchange(true)) first_error = std::move(s);
  }
  return first_error;
}

}  // namespace coalesce::kernels
