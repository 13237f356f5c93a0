// Scaled-dot-product attention on the CPU, one kernel for what an export
// spells out node by node (engine/attention_pattern.h finds it):
//
//   out[b, h, i, :] = softmax_j(scale * q[b, h, i, :] . k[b, h, j, :]
//                               + mask[b, h, i, j]) . v[b, h, j, :]
//
// over strided views (element strides for [batch, heads, rows, cols]; the
// head dimension of q, k, v and out contiguous). Per (batch, head): the
// scores of every query row against the keys up to the last one a row does
// not mask, by one GEMM; the mask added, the row's max taken and exp'd in
// place; the weights times V by a second GEMM into out, divided by the
// row's sum. Keys past that end are masked (mask at or below -1e30,
// kernels/cuda/attention_math.h's IsMaskedKey) for every row, so their
// weights are exactly 0 in float32, as on the GPU; a head with a row that
// masks every key visits every key. A row whose scores are all -inf gives
// NaN, or 0 with zero_masked_rows (PyTorch's IsNaN guard); a NaN or +inf
// score elsewhere gives NaN (the guard then zeroes the reference's row),
// and one at a skipped key is never seen: exact for finite scores. Heads run in
// parallel on the calling thread's OpenMP threads, each in its own part of
// `scratch`.
#ifndef COALESCE_KERNELS_CPU_ATTENTION_H_
#define COALESCE_KERNELS_CPU_ATTENTION_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace coalesce::kernels {

struct AttentionViews {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* mask = nullptr;  // null: none
  float* out = nullptr;
  std::array<int64_t, 4> q_strides{}, k_strides{}, v_strides{}, mask_strides{},
      out_strides{};
  float scale = 1.0f;
  bool zero_masked_rows = false;
  // Packed rows (token packing, engine/token_packing.h), when set: batch
  // entry b's rows are rows offsets[b] to offsets[b + 1] - 1 of q, k, v and
  // out (each view's row stride; batch strides unused), as many queries as
  // keys, all visited; positions[r] is row r's position in its padded
  // sequence, where the mask is read. q_len and kv_len are the padded
  // length (an upper bound of every entry's rows).
  const int64_t* offsets = nullptr;  // [batch + 1]
  const int64_t* positions = nullptr;
};

// Whether Attention takes these strides: the head dimension contiguous
// (stride 1) in q, k, v and out, and their rows at least head_dim apart.
bool AttentionTakes(const AttentionViews& a);

// Scratch bytes Attention needs to run on up to `threads` threads.
size_t AttentionScratchBytes(int64_t q_len, int64_t kv_len, int threads);

// REQUIRES: AttentionTakes(a); `scratch` holds AttentionScratchBytes for
// `scratch_threads` threads (the heads then run on at most that many). The
// output views of different heads do not overlap. Internal if oneDNN fails.
absl::Status Attention(const AttentionViews& a, float* scratch,
                       int scratch_threads);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ATTENTION_H_
