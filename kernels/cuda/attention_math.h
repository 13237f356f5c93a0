// The math of the CUDA fused attention kernel (attention.cu): the online
// softmax of one query row over tiles of keys (a running max and sum,
// rescaled when the max grows, as flash attention keeps them), the final
// normalization with the fully-masked-row rule, the keys a row must visit
// (padding-aware work), the kernel's tiling per
// padded head dim, its block numbering, the check that picks 16-byte
// row loads and the search for a sequence's packed rows; and
// AttentionRowReference, one output row on plain float arrays by the same
// steps, for tests. Host and device; unit-tested on the host
// (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_ATTENTION_MATH_H_
#define COALESCE_KERNELS_CUDA_ATTENTION_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/host_device.h"
#include "kernels/cuda/softmax_math.h"

namespace coalesce::kernels::cuda {

// The running softmax of one query row: softmax_math.h's MaxSum, the
// largest score seen and the sum of exp(score - max) over the scores seen.
// Before any score, and while every score seen is -inf, it is
// EmptyMaxSum(): {-INFINITY, 0}.
using RunningSoftmax = MaxSum;

// The larger of a running max and a score. A NaN score leaves the max as
// it is: its weight (NaN) carries it into the sum and the output.
COALESCE_HD float MaxScore(float max, float score) {
  return score > max ? score : max;
}

// What a new tile of scores, whose largest is tile_max, does to a row: its
// new max, and the factor that rescales the sum and the output accumulator
// kept so far (exp(old max - new max)).
struct TileRescale {
  float max;
  float factor;
};

// The max stays -inf while every score so far is -inf; the sum and the
// accumulator are 0 then, and exp(-inf - -inf) would be NaN: factor 1.
COALESCE_HD TileRescale RescaleForTile(float row_max, float tile_max) {
  const float max = MaxScore(row_max, tile_max);
  if (max == -INFINITY) return {max, 1.0f};
  return {max, expf(row_max - max)};
}

// A score's weight against the row's current max: exp(score - max), and 0
// for a -inf score (also when the max is -inf).
COALESCE_HD float ScoreWeight(float score, float max) {
  return score == -INFINITY ? 0.0f : expf(score - max);
}

// The row after a tile: `weight_sum` is the sum of the tile's weights
// (ScoreWeight against step.max).
COALESCE_HD RunningSoftmax AddTile(RunningSoftmax row, TileRescale step,
                                   float weight_sum) {
  return {step.max, row.sum * step.factor + weight_sum};
}

// The quiet NaN a fully masked row gives when not zero_masked_rows.
COALESCE_HD float AttentionNan() { return FloatOfBits(0x7fc00000u); }

// One output element from its accumulator (sum of weight * v) and the
// row's final sum. The sum is 0 only when every score of the row is -inf
// (the largest finite score has weight 1): 0 when zero_masked_rows, else
// NaN. A NaN score makes the sum NaN and so the output.
COALESCE_HD float AttentionOutputValue(float acc, float sum,
                                       bool zero_masked_rows) {
  if (sum == 0.0f) return zero_masked_rows ? 0.0f : AttentionNan();
  return acc / sum;
}

// With no keys at all (kv_len 0) out is what a MatMul over an empty axis
// gives, 0, whatever zero_masked_rows says.
COALESCE_HD bool ZeroMaskedRows(bool zero_masked_rows, int64_t kv_len) {
  return zero_masked_rows || kv_len == 0;
}

// The head dims the kernel is compiled for: head_dim rounded up to 32, 64,
// 128 or 256 (the padding columns are zeros in shared memory); 0 outside
// 1..256.
COALESCE_HD constexpr int AttentionPaddedHeadDim(int64_t head_dim) {
  if (head_dim < 1 || head_dim > 256) return 0;
  if (head_dim <= 32) return 32;
  if (head_dim <= 64) return 64;
  if (head_dim <= 128) return 128;
  return 256;
}

// Query rows per warp: one tensor-core tile (16x16x16) high.
inline constexpr int kAttentionWarpRows = 16;

// One block's tiles and dynamic shared memory for a padded head dim, the
// float16 path (tensor cores) or the float32 one (FMA):
//   Q [rows_q, ld_q], K [rows_k, ld_k], V [rows_k, ld_v] in the storage type
//   (2 or 4 bytes); the scores S [rows_q, ld_s] and the output accumulator
//   O [rows_q, ld_o] in float; a rescale factor and a final sum per query
//   row. The weights P overwrite S in place (a float16 row at the start of
//   its float row, leading dim 2 * ld_s halves).
// Leading dims: the float16 path's are what wmma requires (a multiple of 8
// halves, 4 floats: 16 bytes) with 16 bytes of padding against bank
// conflicts; the float32 path's are odd (ld_q, ld_k, ld_s) or 2 more than a
// multiple of 32 (ld_o) for conflict-free FMA loops. Every region starts on
// 128 bytes. Each tiling fits 99 KiB (sm_86's largest block), so two blocks
// of most fit an sm_80 SM.
struct AttentionTiling {
  int warps;   // of kAttentionWarpRows query rows each
  int rows_q;  // query rows per block
  int rows_k;  // keys per tile
  int ld_q, ld_k, ld_v, ld_s, ld_o;
  int q_offset, k_offset, v_offset, s_offset, o_offset, scale_offset,
      sum_offset;
  int bytes;
};

COALESCE_HD constexpr int RoundUpTo128(int bytes) {
  return (bytes + 127) / 128 * 128;
}

// REQUIRES: head_dim one of 32, 64, 128, 256.
COALESCE_HD constexpr AttentionTiling MakeAttentionTiling(bool half,
                                                          int head_dim) {
  AttentionTiling t{};
  t.warps = head_dim <= (half ? 128 : 64) ? 4 : 2;
  t.rows_q = kAttentionWarpRows * t.warps;
  t.rows_k = head_dim <= 64 ? 64 : (half || head_dim <= 128) ? 32 : 16;
  t.ld_q = half ? head_dim + 8 : head_dim + 1;
  t.ld_k = t.ld_q;
  t.ld_v = half ? head_dim + 8 : head_dim;
  t.ld_s = half ? t.rows_k + 4 : t.rows_k + 1;
  t.ld_o = half ? head_dim + 4 : head_dim + 2;
  const int element = half ? 2 : 4;
  t.q_offset = 0;
  t.k_offset = t.q_offset + RoundUpTo128(t.rows_q * t.ld_q * element);
  t.v_offset = t.k_offset + RoundUpTo128(t.rows_k * t.ld_k * element);
  t.s_offset = t.v_offset + RoundUpTo128(t.rows_k * t.ld_v * element);
  t.o_offset = t.s_offset + RoundUpTo128(t.rows_q * t.ld_s * 4);
  t.scale_offset = t.o_offset + RoundUpTo128(t.rows_q * t.ld_o * 4);
  t.sum_offset = t.scale_offset + RoundUpTo128(t.rows_q * 4);
  t.bytes = t.sum_offset + RoundUpTo128(t.rows_q * 4);
  return t;
}

// The kernel's blocks are numbered 0 .. q_tiles * heads * batch - 1, the
// query tile fastest: blocks that share a head's keys and values run close
// together (and share them in L2).
struct AttentionBlock {
  int64_t q_tile, head, batch;
};

COALESCE_HD AttentionBlock DecodeAttentionBlock(int64_t block, int64_t q_tiles,
                                                int64_t heads) {
  const int64_t rest = block / q_tiles;
  return {block % q_tiles, rest % heads, rest / heads};
}

// Whether every row of a [batch, heads, rows, head_dim] view (head_dim
// contiguous) at `address`, elements of element_bytes, starts on 16 bytes
// and is whole 16-byte vectors: then the kernel loads its rows as 16-byte
// vectors. strides and extents: batch, head, row; an axis of extent 1 may
// have any stride.
COALESCE_HD bool CanLoadRowsAsVectors(uintptr_t address, int64_t element_bytes,
                                      const int64_t strides[3],
                                      const int64_t extents[3],
                                      int64_t head_dim) {
  if (address % 16 != 0 || head_dim * element_bytes % 16 != 0) return false;
  for (int axis = 0; axis < 3; ++axis) {
    if (extents[axis] > 1 && strides[axis] * element_bytes % 16 != 0) {
      return false;
    }
  }
  return true;
}

// Packed rows (token packing): a pack index of `rows` entries lists a
// [batch, seq] batch's real rows, ascending, as flat indices b * seq + s
// (engine/packing_indices.h), then fillers that repeat its first entry.
// The real rows are its ascending prefix inside [0, padded): the first
// entry that is out of range or not above the one before ends it, and
// what ends it holds from there on in a pack index.
COALESCE_HD bool EndsPackedPrefix(const int64_t* pack, int64_t r,
                                  int64_t padded) {
  return pack[r] < 0 || pack[r] >= padded || (r > 0 && pack[r] <= pack[r - 1]);
}

// Whether row r of a pack index is at or past flat index `flat`: past the
// real rows (EndsPackedPrefix), or a real row whose flat index is at least
// `flat`. False, then true from some row on, so the first row where it
// holds is entry b's first row for flat = b * seq (its rows end where
// entry b + 1's begin), and the count of real rows for flat = padded. A
// batch without a real row packs row 0 as a filler, which counts as one
// real row of entry 0 (computed, never read).
COALESCE_HD bool PackedRowAtOrPast(const int64_t* pack, int64_t r,
                                   int64_t padded, int64_t flat) {
  return EndsPackedPrefix(pack, r, padded) || pack[r] >= flat;
}

// A 32-way search for the first row in [lo, hi) where a predicate that is
// false, then true, holds (hi when none), as a warp runs it: each round
// samples rows lo + i * step (i < 32, below hi; step SearchStep(lo, hi)),
// one per lane, and NarrowSearch keeps the rows after the last sample
// where it does not hold, up to the first where it does (bit i of `holds`:
// it holds at sample i; 0 for samples at or past hi). The search ends when
// lo == hi: max(1, ceil(log32(hi - lo))) rounds of one load each, where a
// bisection by one thread takes log2 rounds.
COALESCE_HD int64_t SearchStep(int64_t lo, int64_t hi) {
  return (hi - lo + 31) / 32;
}

COALESCE_HD void NarrowSearch(int64_t* lo, int64_t* hi, int64_t step,
                              uint32_t holds) {
  if (holds == 0) {  // past the last sample
    const int64_t last = (*hi - *lo - 1) / step;
    *lo += (last < 31 ? last : 31) * step + 1;
    return;
  }
#ifdef __CUDA_ARCH__
  const int64_t first = __ffs(static_cast<int>(holds)) - 1;
#else
  const int64_t first = __builtin_ctz(holds);
#endif
  *hi = *lo + first * step;
  if (first > 0) *lo += (first - 1) * step + 1;
}

// The first of a pack index's `rows` rows at or past `flat`
// (PackedRowAtOrPast), by rounds of NarrowSearch. `ballot(sample)` gives a
// round's 32 bits, bit i sample(i): a loop on the host (SerialBallot), one
// lane per sample and __ballot_sync on the device (every lane of a warp
// calls this with the same arguments and gets the same answer).
template <typename Ballot>
COALESCE_HD int64_t SearchPackedRow(const int64_t* pack, int64_t rows,
                                    int64_t padded, int64_t flat,
                                    const Ballot& ballot) {
  int64_t lo = 0, hi = rows;
  while (lo < hi) {
    const int64_t step = SearchStep(lo, hi);
    const int64_t from = lo, to = hi;
    const uint32_t holds = ballot([&](int i) {
      const int64_t r = from + i * step;
      return r < to && PackedRowAtOrPast(pack, r, padded, flat);
    });
    NarrowSearch(&lo, &hi, step, holds);
  }
  return lo;
}

// SearchPackedRow's ballot on one thread.
struct SerialBallot {
  template <typename Sample>
  COALESCE_HD uint32_t operator()(const Sample& sample) const {
    uint32_t bits = 0;
    for (int i = 0; i < 32; ++i) bits |= sample(i) ? 1u << i : 0u;
    return bits;
  }
};

// One query row's operands on plain float arrays (AttentionRowReference).
struct AttentionRowInput {
  const float* q;  // head_dim values
  const float* k;  // kv_len rows of head_dim values, k_row_stride apart
  int64_t k_row_stride;
  const float* v;  // kv_len rows of head_dim values, v_row_stride apart
  int64_t v_row_stride;
  const float* mask;  // kv_len values mask_stride apart (may be 0); or null
  int64_t mask_stride;
  int64_t kv_len, head_dim;
  float scale;
  bool zero_masked_rows;
};

// Key j's score: scale * q . k[j] + mask[j], the dot product in float32.
COALESCE_HD float AttentionScore(const AttentionRowInput& in, int64_t j) {
  float dot = 0.0f;
  for (int64_t d = 0; d < in.head_dim; ++d) {
    dot += in.q[d] * in.k[j * in.k_row_stride + d];
  }
  const float mask = in.mask != nullptr ? in.mask[j * in.mask_stride] : 0.0f;
  return in.scale * dot + mask;
}

// Padding-aware work. A mask value at or below kMaskedKey (the exporters'
// padding: float32's lowest, -3.4e38, or -inf) gives its key a weight of
// exactly 0 in float32 in every row that has a key above it, whose score
// then bounds the max (exp of -1e30 and less underflows to 0), provided the
// scores are finite. So a row visits only the keys up to its last unmasked
// one: padded keys at the end of a sequence cost nothing, and neither do
// the future keys of a causal mask. A row with no unmasked key visits all:
// its weights depend on every key (uniform for a finite mask).
inline constexpr float kMaskedKey = -1e30f;

COALESCE_HD bool IsMaskedKey(float mask) { return mask <= kMaskedKey; }

// How many keys a row visits: 1 + its last unmasked key; kv_len when every
// key is masked. mask: kv_len values mask_stride apart.
COALESCE_HD int64_t RowKeyEnd(const float* mask, int64_t mask_stride,
                              int64_t kv_len) {
  for (int64_t j = kv_len; j-- > 0;) {
    if (!IsMaskedKey(mask[j * mask_stride])) return j + 1;
  }
  return kv_len;
}

// One output row (head_dim floats, `out` also the accumulator) as the
// kernel computes it: keys up to RowKeyEnd in tiles of tile_k (> 0), each
// tile's max first, then its weights against the new max; float32
// throughout.
COALESCE_HD void AttentionRowReference(const AttentionRowInput& in,
                                       int64_t tile_k, float* out) {
  for (int64_t d = 0; d < in.head_dim; ++d) out[d] = 0.0f;
  RunningSoftmax row = EmptyMaxSum();
  const int64_t end = in.mask != nullptr
                          ? RowKeyEnd(in.mask, in.mask_stride, in.kv_len)
                          : in.kv_len;
  for (int64_t j0 = 0; j0 < end; j0 += tile_k) {
    const int64_t j1 = j0 + tile_k < end ? j0 + tile_k : end;
    float tile_max = -INFINITY;
    for (int64_t j = j0; j < j1; ++j) {
      tile_max = MaxScore(tile_max, AttentionScore(in, j));
    }
    const TileRescale step = RescaleForTile(row.max, tile_max);
    for (int64_t d = 0; d < in.head_dim; ++d) out[d] *= step.factor;
    float weight_sum = 0.0f;
    for (int64_t j = j0; j < j1; ++j) {
      const float weight = ScoreWeight(AttentionScore(in, j), step.max);
      weight_sum += weight;
      for (int64_t d = 0; d < in.head_dim; ++d) {
        out[d] += weight * in.v[j * in.v_row_stride + d];
      }
    }
    row = AddTile(row, step, weight_sum);
  }
  const bool zero = ZeroMaskedRows(in.zero_masked_rows, in.kv_len);
  for (int64_t d = 0; d < in.head_dim; ++d) {
    out[d] = AttentionOutputValue(out[d], row.sum, zero);
  }
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_ATTENTION_MATH_H_
