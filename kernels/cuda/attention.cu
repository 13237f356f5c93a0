#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_math.h"
#include "kernels/cuda/launch_util.cuh"

// One block per (query tile, head, batch): each of its warps owns 16 query
// rows, keeps their running softmax (attention_math.h) in registers and
// their output accumulator in shared memory, and the block walks the keys
// and values in tiles it stages in shared memory (flash attention 2's
// loop), up to the last key the tile's rows do not mask (padding-aware:
// TileKeyEnd). Per key tile: the block loads K, V (and the mask, into the score
// tile); each warp computes its rows' scores, two lanes a row update the
// running max and sum and write the weights over the scores, and the warp
// rescales its accumulator and adds weights . V. Float16 and bfloat16
// operands go through tensor cores (wmma 16x16x16, 16-bit inputs, float32
// accumulation; the weights are rounded to the operands' 16-bit type for
// the second product, and the row sums add the rounded weights, so each
// row's weights sum to 1); float32 ones through float32 FMA (no TF32). The
// tiling per padded head dim is MakeAttentionTiling's.

namespace coalesce::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;

static_assert(AttentionPaddedHeadDim(kMaxAttentionHeadDim) ==
              kMaxAttentionHeadDim);

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarpRows = kAttentionWarpRows;

// The kernel's operands: T (q, k, v), M (mask) and Y (out) are float,
// uint16_t for float16 bits, or BFloat16Bits (float_storage.h).
template <typename T, typename M, typename Y>
struct AttentionParams {
  const T* q;
  const T* k;
  const T* v;
  const M* mask;  // null: no mask
  Y* out;
  AttentionStrides q_strides, k_strides, v_strides, mask_strides, out_strides;
  AttentionShape shape;
  int64_t q_tiles;  // query tiles per (batch, head)
  int64_t blocks;   // q_tiles * heads * batch
  float scale;
  bool zero_masked_rows;              // ZeroMaskedRows's
  bool vector_q, vector_k, vector_v;  // CanLoadRowsAsVectors's
  const int64_t* pack;                // packed rows (attention.h); or null
  int64_t packed_rows;
};

// MakeAttentionTiling's numbers as constants for the kernel of element
// type T and padded head dim kD.
template <typename T, int kD>
struct Tiles {
  // 16-bit q, k and v (float16 or bfloat16): products on tensor cores.
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr AttentionTiling kT = MakeAttentionTiling(kHalf, kD);
  static constexpr int kWarps = kT.warps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRowsQ = kT.rows_q, kRowsK = kT.rows_k;
  static constexpr int kLdQ = kT.ld_q, kLdK = kT.ld_k, kLdV = kT.ld_v;
  static constexpr int kLdS = kT.ld_s, kLdO = kT.ld_o;
  static constexpr int kQOffset = kT.q_offset, kKOffset = kT.k_offset;
  static constexpr int kVOffset = kT.v_offset, kSOffset = kT.s_offset;
  static constexpr int kOOffset = kT.o_offset;
  static constexpr int kScaleOffset = kT.scale_offset;
  static constexpr int kSumOffset = kT.sum_offset;
  static constexpr int kBytes = kT.bytes;
  // The register path's: Q, K, V and the score tile (the mask's, and its
  // TileKeyEnd scratch); no output accumulator, rescale factors or sums.
  static constexpr int kRegisterBytes = kT.o_offset;
  static_assert(kRowsK % 16 == 0 && kD % 16 == 0);
};

// One block's shared memory, carved as MakeAttentionTiling lays it out.
template <typename T>
struct SharedTiles {
  T* q;
  T* k;
  T* v;
  float* s;      // scores, then the weights over them
  float* o;      // output accumulator
  float* scale;  // per query row: this tile's rescale factor
  float* sum;    // per query row: the final sum
};

template <typename T, int kD>
__device__ SharedTiles<T> CarveShared(unsigned char* base) {
  using Tl = Tiles<T, kD>;
  return {reinterpret_cast<T*>(base + Tl::kQOffset),
          reinterpret_cast<T*>(base + Tl::kKOffset),
          reinterpret_cast<T*>(base + Tl::kVOffset),
          reinterpret_cast<float*>(base + Tl::kSOffset),
          reinterpret_cast<float*>(base + Tl::kOOffset),
          reinterpret_cast<float*>(base + Tl::kScaleOffset),
          reinterpret_cast<float*>(base + Tl::kSumOffset)};
}

// The tensor-core element type of 16-bit storage T.
template <typename T>
struct MmaElement;
template <>
struct MmaElement<uint16_t> {
  using Type = __half;
};
template <>
struct MmaElement<BFloat16Bits> {
  using Type = __nv_bfloat16;
};
template <typename T>
using Mma = typename MmaElement<T>::Type;

template <typename T>
__device__ __forceinline__ const Mma<T>* AsMma(const T* bits) {
  return reinterpret_cast<const Mma<T>*>(bits);
}

// Stores 16 bytes of elements at dst: one vector store where the row
// layout keeps dst on 16 bytes (kLd elements of T a whole number of 16
// bytes), element by element otherwise.
template <int kLd, typename T>
__device__ void StoreVector(uint4 bits, T* dst) {
  if constexpr (kLd * sizeof(T) % 16 == 0) {
    *reinterpret_cast<uint4*>(dst) = bits;
  } else {
    T elements[16 / sizeof(T)];
    memcpy(elements, &bits, sizeof(bits));
#pragma unroll
    for (int e = 0; e < 16 / static_cast<int>(sizeof(T)); ++e) {
      dst[e] = elements[e];
    }
  }
}

// Rows row0 .. row0 + kRows - 1 of a [rows, head_dim] view (rows `stride`
// elements apart, head_dim contiguous) into dst [kRows, kLd] by the whole
// block: rows at or past `rows` and columns at or past head_dim (up to kD)
// are zeros. `vector`: CanLoadRowsAsVectors holds, rows load as 16-byte
// vectors.
template <int kRows, int kD, int kLd, int kThreads, typename T>
__device__ void LoadRows(const T* __restrict__ src, int64_t stride,
                         int64_t row0, int64_t rows, int head_dim, bool vector,
                         T* dst) {
  if (vector) {
    constexpr int kVector = 16 / sizeof(T);
    constexpr int kChunks = kD / kVector;
    for (int item = threadIdx.x; item < kRows * kChunks; item += kThreads) {
      const int r = item / kChunks;
      const int c = item % kChunks * kVector;
      uint4 bits = make_uint4(0u, 0u, 0u, 0u);
      if (row0 + r < rows && c < head_dim) {
        bits = *reinterpret_cast<const uint4*>(src + (row0 + r) * stride + c);
      }
      StoreVector<kLd>(bits, dst + r * kLd + c);
    }
  } else {
    for (int item = threadIdx.x; item < kRows * kD; item += kThreads) {
      const int r = item / kD;
      const int c = item % kD;
      dst[r * kLd + c] =
          row0 + r < rows && c < head_dim ? src[(row0 + r) * stride + c] : T{0};
    }
  }
}

// Where the mask reads a query or key row: packed rows at their positions
// in their sequence (`rows`, the sequence's pack index entries, minus
// `origin`, its first flat row b * seq); padded ones at their own.
struct MaskPositions {
  const int64_t* rows = nullptr;  // null: padded
  int64_t origin = 0;
  __device__ int64_t operator()(int64_t i) const {
    return rows == nullptr ? i : rows[i] - origin;
  }
};

// The mask's [kRowsQ, kRowsK] tile at query row i0 and key j0 into the
// score tile s (leading dim kLdS) as float, by the whole block; 0 outside
// the q_len x kv_len rows and columns. mask: the (batch, head)'s origin.
template <int kRowsQ, int kRowsK, int kLdS, int kThreads, typename M>
__device__ void LoadMask(const M* __restrict__ mask,
                         const AttentionStrides& strides, MaskPositions at,
                         int64_t i0, int64_t j0, int64_t q_len, int64_t kv_len,
                         float* s) {
  for (int item = threadIdx.x; item < kRowsQ * kRowsK; item += kThreads) {
    const int r = item / kRowsK;
    const int c = item % kRowsK;
    float x = 0.0f;
    if (i0 + r < q_len && j0 + c < kv_len) {
      x = ToFloat(mask[at(i0 + r) * strides.row + at(j0 + c) * strides.col]);
    }
    s[r * kLdS + c] = x;
  }
}

// One warp's scores on tensor cores: s[16, kRowsK] = scale * q[16, kD] .
// k[kRowsK, kD]^T (+ the mask already in s when has_mask). Columns of q and
// k at or past head_dim are zeros; whole 16-column steps of them are
// skipped.
template <typename T, int kD, int kRowsK, int kLdQ, int kLdK, int kLdS>
__device__ void ScoresMma(const T* q, const T* k, float* s, int head_dim,
                          float scale, bool has_mask) {
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kRowsK / 16];
#pragma unroll
  for (int n = 0; n < kRowsK / 16; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    if (kk * 16 >= head_dim) break;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, Mma<T>, wmma::row_major> a;
    wmma::load_matrix_sync(a, AsMma(q + kk * 16), kLdQ);
#pragma unroll
    for (int n = 0; n < kRowsK / 16; ++n) {
      // K's rows are Kᵀ's columns: Kᵀ as a column-major matrix.
      wmma::fragment<wmma::matrix_b, 16, 16, 16, Mma<T>, wmma::col_major> b;
      wmma::load_matrix_sync(b, AsMma(k + n * 16 * kLdK + kk * 16), kLdK);
      wmma::mma_sync(acc[n], a, b, acc[n]);
    }
  }
#pragma unroll
  for (int n = 0; n < kRowsK / 16; ++n) {
    // Fragments of one type map their elements alike: the mask's element e
    // is the scores' element e.
    if (has_mask) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> mask;
      wmma::load_matrix_sync(mask, s + n * 16, kLdS, wmma::mem_row_major);
#pragma unroll
      for (int e = 0; e < acc[n].num_elements; ++e) {
        acc[n].x[e] = acc[n].x[e] * scale + mask.x[e];
      }
    } else {
#pragma unroll
      for (int e = 0; e < acc[n].num_elements; ++e) acc[n].x[e] *= scale;
    }
    wmma::store_matrix_sync(s + n * 16, acc[n], kLdS, wmma::mem_row_major);
  }
}

// One warp's scores in float32 FMA, as ScoresMma's. Lane: 4 rows (4 *
// (lane / 8) on) by kRowsK / 8 columns (lane % 8, 8 apart).
template <int kRowsK, int kLdQ, int kLdK, int kLdS>
__device__ void ScoresFma(const float* q, const float* k, float* s,
                          int head_dim, float scale, bool has_mask) {
  constexpr int kCols = kRowsK / 8;
  const int lane = threadIdx.x % 32;
  const int row0 = lane / 8 * 4;
  const int col0 = lane % 8;
  float acc[4][kCols] = {};
  for (int d = 0; d < head_dim; ++d) {
    float qd[4], kd[kCols];
#pragma unroll
    for (int i = 0; i < 4; ++i) qd[i] = q[(row0 + i) * kLdQ + d];
#pragma unroll
    for (int c = 0; c < kCols; ++c) kd[c] = k[(col0 + 8 * c) * kLdK + d];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[i][c] = fmaf(qd[i], kd[c], acc[i][c]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      float* score = s + (row0 + i) * kLdS + col0 + 8 * c;
      *score = acc[i][c] * scale + (has_mask ? *score : 0.0f);
    }
  }
}

// A weight as the second product reads it: float, or float16 whose value
// the row sum then adds (each row's weights sum to exactly what divides).
__device__ __forceinline__ float StoreWeight(float w, float* p) {
  *p = w;
  return w;
}

__device__ __forceinline__ float StoreWeight(float w, __half* p) {
  const __half rounded = __float2half_rn(w);
  *p = rounded;
  return __half2float(rounded);
}

__device__ __forceinline__ float StoreWeight(float w, __nv_bfloat16* p) {
  const __nv_bfloat16 rounded = __float2bfloat16_rn(w);
  *p = rounded;
  return __bfloat162float(rounded);
}

// One warp's 16 rows of a key tile, two lanes a row (lane / 2; columns of
// the lane's parity): reads the scores s (keys at or past `keys` count as
// -inf), updates the lane's row `row`, writes the weights over the scores
// (P elements, each row's at the start of its score row) and the row's
// rescale factor, and returns the updated row.
template <int kRowsK, int kLdS, typename P>
__device__ RunningSoftmax SoftmaxTile(float* s, int keys, RunningSoftmax row,
                                      float* row_scale) {
  const int lane = threadIdx.x % 32;
  const int r = lane / 2;
  const int parity = lane % 2;
  float score[kRowsK / 2];
  float tile_max = -INFINITY;
#pragma unroll
  for (int t = 0; t < kRowsK / 2; ++t) {
    const int j = parity + 2 * t;
    score[t] = j < keys ? s[r * kLdS + j] : -INFINITY;
    tile_max = MaxScore(tile_max, score[t]);
  }
  tile_max = MaxScore(tile_max, __shfl_xor_sync(kFullWarp, tile_max, 1));
  const TileRescale step = RescaleForTile(row.max, tile_max);
  __syncwarp();  // every score is read: the weights may overwrite them
  P* weights = reinterpret_cast<P*>(s + r * kLdS);
  float weight_sum = 0.0f;
#pragma unroll
  for (int t = 0; t < kRowsK / 2; ++t) {
    const int j = parity + 2 * t;
    weight_sum += StoreWeight(ScoreWeight(score[t], step.max), weights + j);
  }
  weight_sum += __shfl_xor_sync(kFullWarp, weight_sum, 1);
  if (parity == 0) row_scale[r] = step.factor;
  return AddTile(row, step, weight_sum);
}

// One warp's o[16, kD] = o * row_scale (per row) + p[16, kRowsK] . v[kRowsK,
// kD] on tensor cores; p: float16 weights over the float score tile s.
// Whole 16-column steps at or past head_dim are skipped (never written out).
template <typename T, int kD, int kRowsK, int kLdS, int kLdV, int kLdO>
__device__ void AccumulateMma(const float* s, const T* v,
                              const float* row_scale, float* o, int head_dim) {
  const int lane = threadIdx.x % 32;
  for (int item = lane; item < kWarpRows * kD; item += 32) {
    const int r = item / kD;
    o[r * kLdO + item % kD] *= row_scale[r];
  }
  __syncwarp();
  const Mma<T>* p = reinterpret_cast<const Mma<T>*>(s);
  constexpr int kLdP = 2 * kLdS;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, Mma<T>, wmma::row_major>
      a[kRowsK / 16];
#pragma unroll
  for (int kk = 0; kk < kRowsK / 16; ++kk) {
    wmma::load_matrix_sync(a[kk], p + kk * 16, kLdP);
  }
#pragma unroll
  for (int n = 0; n < kD / 16; ++n) {
    if (n * 16 >= head_dim) break;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, o + n * 16, kLdO, wmma::mem_row_major);
#pragma unroll
    for (int kk = 0; kk < kRowsK / 16; ++kk) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, Mma<T>, wmma::row_major> b;
      wmma::load_matrix_sync(b, AsMma(v + kk * 16 * kLdV + n * 16), kLdV);
      wmma::mma_sync(acc, a[kk], b, acc);
    }
    wmma::store_matrix_sync(o + n * 16, acc, kLdO, wmma::mem_row_major);
  }
}

// AccumulateMma's in float32 FMA, over the tile's first `keys` keys (the
// others weigh 0), in column chunks of up to 64. Lane: 4 rows (4 * (lane /
// 8) on) by chunk / 8 columns (lane % 8, 8 apart).
template <int kD, int kLdS, int kLdV, int kLdO>
__device__ void AccumulateFma(const float* p, const float* v,
                              const float* row_scale, float* o, int head_dim,
                              int keys) {
  constexpr int kChunk = kD < 64 ? kD : 64;
  constexpr int kCols = kChunk / 8;
  const int lane = threadIdx.x % 32;
  const int row0 = lane / 8 * 4;
  const int col0 = lane % 8;
  float factor[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) factor[i] = row_scale[row0 + i];
  for (int chunk = 0; chunk < kD && chunk < head_dim; chunk += kChunk) {
    float acc[4][kCols];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        acc[i][c] = o[(row0 + i) * kLdO + chunk + col0 + 8 * c] * factor[i];
      }
    }
    for (int j = 0; j < keys; ++j) {
      float pj[4], vj[kCols];
#pragma unroll
      for (int i = 0; i < 4; ++i) pj[i] = p[(row0 + i) * kLdS + j];
#pragma unroll
      for (int c = 0; c < kCols; ++c)
        vj[c] = v[j * kLdV + chunk + col0 + 8 * c];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int c = 0; c < kCols; ++c)
          acc[i][c] = fmaf(pj[i], vj[c], acc[i][c]);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        o[(row0 + i) * kLdO + chunk + col0 + 8 * c] = acc[i][c];
      }
    }
  }
}

// One warp's scores, softmax step and accumulation for the key tile in
// shared memory (keys: how many of its rows are keys), on its 16 rows.
template <typename T, int kD>
__device__ RunningSoftmax WarpTile(const SharedTiles<T>& sh, int warp, int keys,
                                   int head_dim, float scale, bool has_mask,
                                   RunningSoftmax row) {
  using Tl = Tiles<T, kD>;
  const int first = warp * kWarpRows;
  float* s = sh.s + first * Tl::kLdS;
  float* o = sh.o + first * Tl::kLdO;
  float* row_scale = sh.scale + first;
  if constexpr (Tl::kHalf) {
    ScoresMma<T, kD, Tl::kRowsK, Tl::kLdQ, Tl::kLdK, Tl::kLdS>(
        sh.q + first * Tl::kLdQ, sh.k, s, head_dim, scale, has_mask);
    __syncwarp();
    row = SoftmaxTile<Tl::kRowsK, Tl::kLdS, Mma<T>>(s, keys, row, row_scale);
    __syncwarp();
    AccumulateMma<T, kD, Tl::kRowsK, Tl::kLdS, Tl::kLdV, Tl::kLdO>(
        s, sh.v, row_scale, o, head_dim);
  } else {
    ScoresFma<Tl::kRowsK, Tl::kLdQ, Tl::kLdK, Tl::kLdS>(
        sh.q + first * Tl::kLdQ, sh.k, s, head_dim, scale, has_mask);
    __syncwarp();
    row = SoftmaxTile<Tl::kRowsK, Tl::kLdS, float>(s, keys, row, row_scale);
    __syncwarp();
    AccumulateFma<kD, Tl::kLdS, Tl::kLdV, Tl::kLdO>(s, sh.v, row_scale, o,
                                                    head_dim, keys);
  }
  return row;
}

// ---------------------------------------------------------------------------
// The register path (AttentionArgs::registers): FlashAttention 2's loop with
// each warp's scores, weights and output accumulator in registers, on
// mma.sync m16n8k16 (16-bit operands, float32 accumulation), whose fragment
// layouts PTX defines (wmma's are unspecified, which is why the path above
// keeps its accumulator in shared memory). Lane l of a warp holds, of a
// 16 x 8 accumulator tile, rows g = l / 4 and g + 8 at columns 2 * (l % 4)
// and 2 * (l % 4) + 1 (elements 0, 1: row g; 2, 3: row g + 8); an A tile
// (16 x 16) as four registers of two elements: rows g, g + 8, g, g + 8 at
// columns 2t, 2t, 2t + 8, 2t + 8 (t = l % 4), the pair's first element in
// the low half; a B tile (16 x 8, k by n) as two: k = 2t, 2t + 1 and
// 2t + 8, 2t + 9 at column n = g. So the weights of two adjacent 8-key
// score tiles are, as they lie in registers, the A tile of the second
// product. The math per row is the shared-memory path's (attention_math.h):
// the same max, rescale, weights rounded to the operands' type and summed
// as rounded.

// The 16 bits of a stored element.
__device__ __forceinline__ uint16_t Bits16(uint16_t x) { return x; }
__device__ __forceinline__ uint16_t Bits16(BFloat16Bits x) { return x.bits; }

// The hardware's pair type of 16-bit T and its conversions: to nearest,
// ties to even, as FromFloat for every finite value.
template <typename T>
struct HardwarePair;
template <>
struct HardwarePair<uint16_t> {
  using Type = __half2;
  static __device__ Type Round(float a, float b) {
    return __floats2half2_rn(a, b);
  }
  static __device__ float2 Widen(Type h) { return __half22float2(h); }
};
template <>
struct HardwarePair<BFloat16Bits> {
  using Type = __nv_bfloat162;
  static __device__ Type Round(float a, float b) {
    return __floats2bfloat162_rn(a, b);
  }
  static __device__ float2 Widen(Type h) { return __bfloat1622float2(h); }
};

// Weights w0 and w1 (finite or NaN) rounded to T as one register (w0 in
// the low half), the rounded values added to `sum`: HardwarePair's
// conversions, not FromFloat's integer steps, in the inner loop.
template <typename T>
__device__ __forceinline__ uint32_t RoundWeights(float w0, float w1,
                                                 float& sum) {
  const typename HardwarePair<T>::Type h = HardwarePair<T>::Round(w0, w1);
  const float2 f = HardwarePair<T>::Widen(h);
  sum += f.x + f.y;
  uint32_t bits;
  memcpy(&bits, &h, sizeof(bits));
  return bits;
}

// Two elements as one register: `lo` the lower column (or k).
__device__ __forceinline__ uint32_t PackPair(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
}

// Elements p[0] and p[1] (p 4-byte aligned) as one register.
template <typename T>
__device__ __forceinline__ uint32_t LoadPair(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// d += a . b on one 16 x 8 x 16 tile.
__device__ __forceinline__ void MmaTile(uint16_t /*type*/, float (&d)[4],
                                        const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void MmaTile(BFloat16Bits /*type*/, float (&d)[4],
                                        const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A warp's state on the register path: its lane's output accumulator
// elements (kD / 8 tiles of 16 x 8) and the running softmax of its two rows
// (g and g + 8; the four lanes of a row hold the same).
template <int kD>
struct RegisterRows {
  float o[kD / 8][4];
  RunningSoftmax row[2];
};

template <int kD>
__device__ void ClearRegisterRows(RegisterRows<kD>& st) {
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) st.o[n][e] = 0.0f;
  }
  st.row[0] = st.row[1] = EmptyMaxSum();
}

// The max, then the sum, of the four lanes of a row (lanes l ^ 1, l ^ 2).
__device__ __forceinline__ float RowMax(float x) {
  x = MaxScore(x, __shfl_xor_sync(kFullWarp, x, 1));
  return MaxScore(x, __shfl_xor_sync(kFullWarp, x, 2));
}
__device__ __forceinline__ float RowSum(float x) {
  x += __shfl_xor_sync(kFullWarp, x, 1);
  return x + __shfl_xor_sync(kFullWarp, x, 2);
}

// One warp's key tile on the register path: scores of its 16 rows (q in
// shared memory, with the mask in the score tile when has_mask; keys at or
// past `keys` count as -inf), the softmax step, and the accumulation of
// weights . v into st.
template <typename T, int kD>
__device__ void WarpTileRegisters(const SharedTiles<T>& sh, int warp, int keys,
                                  int head_dim, float scale, bool has_mask,
                                  RegisterRows<kD>& st) {
  using Tl = Tiles<T, kD>;
  constexpr int kKeyTiles = Tl::kRowsK / 8;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const T* q = sh.q + warp * kWarpRows * Tl::kLdQ;
  const float* mask = sh.s + warp * kWarpRows * Tl::kLdS;
  float s[kKeyTiles][4];
#pragma unroll
  for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
  }
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    if (kk * 16 >= head_dim) break;
    const T* q0 = q + g * Tl::kLdQ + kk * 16 + 2 * t;
    const uint32_t a[4] = {LoadPair(q0), LoadPair(q0 + 8 * Tl::kLdQ),
                           LoadPair(q0 + 8), LoadPair(q0 + 8 * Tl::kLdQ + 8)};
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
      // Kᵀ's column (n * 8 + g) is K's row.
      const T* k0 = sh.k + (n * 8 + g) * Tl::kLdK + kk * 16 + 2 * t;
      MmaTile(T{}, s[n], a, LoadPair(k0), LoadPair(k0 + 8));
    }
  }
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e / 2;
      const int col = n * 8 + 2 * t + e % 2;
      float x = s[n][e] * scale;
      if (has_mask) x += mask[(g + 8 * r) * Tl::kLdS + col];
      s[n][e] = col < keys ? x : -INFINITY;
      tile_max[r] = MaxScore(tile_max[r], s[n][e]);
    }
  }
  TileRescale step[2];
  float weight_sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    step[r] = RescaleForTile(st.row[r].max, RowMax(tile_max[r]));
  }
  // The weights rounded to T, two a register: [n][r] holds row g + 8r's
  // elements 2r and 2r + 1 of score tile n.
  uint32_t p[kKeyTiles][2];
#pragma unroll
  for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      p[n][r] = RoundWeights<T>(ScoreWeight(s[n][2 * r], step[r].max),
                                ScoreWeight(s[n][2 * r + 1], step[r].max),
                                weight_sum[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.row[r] = AddTile(st.row[r], step[r], RowSum(weight_sum[r]));
  }
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) st.o[n][e] *= step[e / 2].factor;
  }
#pragma unroll
  for (int kk = 0; kk < kKeyTiles / 2; ++kk) {
    const uint32_t a[4] = {p[2 * kk][0], p[2 * kk][1], p[2 * kk + 1][0],
                           p[2 * kk + 1][1]};
    // V's rows kk * 16 + 2t, + 1, + 8, + 9 at column n * 8 + g.
    const T* v0 = sh.v + (kk * 16 + 2 * t) * Tl::kLdV + g;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      if (n * 8 >= head_dim) break;
      const T* v = v0 + n * 8;
      MmaTile(T{}, st.o[n], a, PackPair(Bits16(v[0]), Bits16(v[Tl::kLdV])),
              PackPair(Bits16(v[8 * Tl::kLdV]), Bits16(v[9 * Tl::kLdV])));
    }
  }
}

// Writes one warp's rows (row0 its first; those below q_len) from the
// register path's state: accumulator / sum, or the masked-row value.
template <typename Y, int kD>
__device__ void WriteRegisterRows(const RegisterRows<kD>& st, Y* out,
                                  int64_t row_stride, int64_t row0,
                                  int64_t q_len, int head_dim,
                                  bool zero_masked_rows) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = row0 + g + 8 * r;
    if (i >= q_len) continue;
    Y* dst = out + i * row_stride;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int d = n * 8 + 2 * t + c;
        if (d < head_dim) {
          dst[d] = FromFloat<Y>(AttentionOutputValue(
              st.o[n][2 * r + c], st.row[r].sum, zero_masked_rows));
        }
      }
    }
  }
}

// Writes one warp's 16 output rows (those below q_len): accumulator / sum,
// or the masked-row value (AttentionOutputValue), one row at a time across
// the lanes.
template <typename Y, int kLdO>
__device__ void WriteRows(const float* o, const float* row_sum, Y* out,
                          int64_t row_stride, int64_t i0, int64_t q_len,
                          int head_dim, bool zero_masked_rows) {
  const int lane = threadIdx.x % 32;
  for (int r = 0; r < kWarpRows && i0 + r < q_len; ++r) {
    Y* dst = out + (i0 + r) * row_stride;
    const float sum = row_sum[r];
    for (int d = lane; d < head_dim; d += 32) {
      dst[d] = FromFloat<Y>(
          AttentionOutputValue(o[r * kLdO + d], sum, zero_masked_rows));
    }
  }
}

// The keys a query tile visits (attention_math.h's RowKeyEnd over its
// rows): the largest row end, or kv_len when some row has no unmasked key.
// A warp a row, 32 keys a step from the last key down; one row when the
// mask is broadcast over the queries (row stride 0). Rows and keys are read
// at their positions (`at`: packed rows). Block-wide; scratch: two ints of
// shared memory nothing else uses meanwhile.
template <int kRowsQ, int kThreads, typename M>
__device__ int64_t TileKeyEnd(const M* __restrict__ mask,
                              const AttentionStrides& strides, MaskPositions at,
                              int64_t i0, int64_t q_len, int64_t kv_len,
                              int* scratch) {
  constexpr int kWarps = kThreads / 32;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    scratch[0] = 0;  // the largest row end
    scratch[1] = 0;  // 1: a row has no unmasked key
  }
  __syncthreads();
  int64_t rows = q_len - i0 < kRowsQ ? q_len - i0 : kRowsQ;
  if (strides.row == 0) rows = 1;
  for (int64_t r = warp; r < rows; r += kWarps) {
    const M* row = mask + at(i0 + r) * strides.row;
    int64_t end = 0;
    for (int64_t top = kv_len; top > 0 && end == 0; top -= 32) {
      const int64_t j = top - 1 - lane;
      const bool visible =
          j >= 0 && !IsMaskedKey(ToFloat(row[at(j) * strides.col]));
      const unsigned ballot = __ballot_sync(kFullWarp, visible);
      // The lowest lane set holds the highest visible key.
      if (ballot != 0) end = top - (__ffs(ballot) - 1);
    }
    if (lane == 0) {
      if (end == 0) {
        atomicExch(&scratch[1], 1);
      } else {
        atomicMax(&scratch[0], static_cast<int>(end));
      }
    }
  }
  __syncthreads();
  const int64_t key_end = scratch[1] != 0 ? kv_len : scratch[0];
  __syncthreads();  // every thread read scratch before it is reused
  return key_end;
}

// SearchPackedRow's ballot across a warp: lane i evaluates sample i.
struct WarpBallot {
  template <typename Sample>
  __device__ uint32_t operator()(const Sample& sample) const {
    return __ballot_sync(0xffffffffu, sample(threadIdx.x % 32));
  }
};

// Packed rows: batch entry b's first row and row count in the pack index,
// found by the block's first warp (attention_math.h's SearchPackedRow: two
// 32-way searches). Block-wide (blockDim.x >= 32: the whole first warp);
// scratch: two int64s of shared memory nothing else uses meanwhile.
struct PackedEntry {
  int64_t first, rows;
};

__device__ PackedEntry FindPackedEntry(const int64_t* __restrict__ pack,
                                       int64_t packed_rows, int64_t b,
                                       int64_t seq, int64_t batch,
                                       int64_t* scratch) {
  if (threadIdx.x < 32) {
    const int64_t padded = batch * seq;
    const int64_t first =
        SearchPackedRow(pack, packed_rows, padded, b * seq, WarpBallot{});
    const int64_t end =
        SearchPackedRow(pack, packed_rows, padded, (b + 1) * seq, WarpBallot{});
    if (threadIdx.x == 0) {
      scratch[0] = first;
      scratch[1] = end - first;
    }
  }
  __syncthreads();
  const PackedEntry entry = {scratch[0], scratch[1]};
  __syncthreads();  // every thread read scratch before it is reused
  return entry;
}

// One block's query tile of one (batch, head): every key tile up to the
// tile's key end (padded keys skipped, TileKeyEnd), then out; each warp's
// rows on the register path when kRegisters. Packed rows: the entry's own
// rows, the mask read at their positions; a tile past them does nothing.
template <typename T, typename M, typename Y, int kD, bool kRegisters>
__device__ void AttendQueryTile(const AttentionParams<T, M, Y>& p,
                                const AttentionBlock& at,
                                const SharedTiles<T>& sh) {
  using Tl = Tiles<T, kD>;
  const AttentionShape& n = p.shape;
  const int head_dim = static_cast<int>(n.head_dim);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int64_t i0 = at.q_tile * Tl::kRowsQ;
  // Scratch until the key loop: the final sums' region, or on the register
  // path (which has none) the score tile's.
  void* scratch = kRegisters ? static_cast<void*>(sh.s) : sh.sum;
  // The entry's rows: the view's batch at its stride, or packed ones.
  int64_t q_len = n.q_len, kv_len = n.kv_len;
  int64_t first_row = -1;  // packed: the entry's first row
  MaskPositions positions;
  if (p.pack != nullptr) {
    const PackedEntry entry =
        FindPackedEntry(p.pack, p.packed_rows, at.batch, n.q_len, n.batch,
                        static_cast<int64_t*>(scratch));
    if (i0 >= entry.rows) return;  // the same in every thread of the block
    q_len = kv_len = entry.rows;
    first_row = entry.first;
    positions = {p.pack + entry.first, at.batch * n.q_len};
  }
  auto origin = [&](const AttentionStrides& s) {
    return (first_row >= 0 ? first_row * s.row : at.batch * s.batch) +
           at.head * s.head;
  };
  const bool warp_has_rows = i0 + warp * kWarpRows < q_len;
  const T* q = p.q + origin(p.q_strides);
  const T* k = p.k + origin(p.k_strides);
  const T* v = p.v + origin(p.v_strides);
  const M* mask = p.mask == nullptr ? nullptr
                                    : p.mask + at.batch * p.mask_strides.batch +
                                          at.head * p.mask_strides.head;

  LoadRows<Tl::kRowsQ, kD, Tl::kLdQ, Tl::kThreads>(
      q, p.q_strides.row, i0, q_len, head_dim, p.vector_q, sh.q);
  float* o = sh.o + warp * kWarpRows * Tl::kLdO;
  RunningSoftmax row = EmptyMaxSum();
  RegisterRows<kRegisters ? kD : 8> st;
  if constexpr (kRegisters) {
    ClearRegisterRows(st);
  } else {
    for (int item = lane; item < kWarpRows * Tl::kLdO; item += 32)
      o[item] = 0.0f;
  }
  const int64_t kv_end = mask == nullptr
                             ? kv_len
                             : TileKeyEnd<Tl::kRowsQ, Tl::kThreads>(
                                   mask, p.mask_strides, positions, i0, q_len,
                                   kv_len, static_cast<int*>(scratch));
  for (int64_t j0 = 0; j0 < kv_end; j0 += Tl::kRowsK) {
    __syncthreads();  // the last tile's K, V and scores are used up
    LoadRows<Tl::kRowsK, kD, Tl::kLdK, Tl::kThreads>(
        k, p.k_strides.row, j0, kv_end, head_dim, p.vector_k, sh.k);
    LoadRows<Tl::kRowsK, kD, Tl::kLdV, Tl::kThreads>(
        v, p.v_strides.row, j0, kv_end, head_dim, p.vector_v, sh.v);
    if (mask != nullptr) {
      LoadMask<Tl::kRowsQ, Tl::kRowsK, Tl::kLdS, Tl::kThreads>(
          mask, p.mask_strides, positions, i0, j0, q_len, kv_end, sh.s);
    }
    __syncthreads();
    if (warp_has_rows) {
      const int keys =
          static_cast<int>(kv_end - j0 < Tl::kRowsK ? kv_end - j0 : Tl::kRowsK);
      if constexpr (kRegisters) {
        WarpTileRegisters<T, kD>(sh, warp, keys, head_dim, p.scale,
                                 mask != nullptr, st);
      } else {
        row = WarpTile<T, kD>(sh, warp, keys, head_dim, p.scale,
                              mask != nullptr, row);
      }
    }
  }
  Y* out = p.out + origin(p.out_strides);
  if constexpr (kRegisters) {
    WriteRegisterRows<Y, kD>(st, out, p.out_strides.row, i0 + warp * kWarpRows,
                             q_len, head_dim, p.zero_masked_rows);
    return;
  }
  float* row_sum = sh.sum + warp * kWarpRows;
  if (lane % 2 == 0) row_sum[lane / 2] = row.sum;
  __syncwarp();
  WriteRows<Y, Tl::kLdO>(o, row_sum, out, p.out_strides.row,
                         i0 + warp * kWarpRows, q_len, head_dim,
                         p.zero_masked_rows);
}

template <typename T, typename M, typename Y, int kD, bool kRegisters>
__global__ void __launch_bounds__(Tiles<T, kD>::kThreads)
    AttentionKernel(const AttentionParams<T, M, Y> p) {
  extern __shared__ __align__(128) unsigned char shared[];
  const SharedTiles<T> sh = CarveShared<T, kD>(shared);
  for (int64_t block = blockIdx.x; block < p.blocks; block += gridDim.x) {
    AttendQueryTile<T, M, Y, kD, kRegisters>(
        p, DecodeAttentionBlock(block, p.q_tiles, p.shape.heads), sh);
    __syncthreads();  // the next query tile reuses shared memory
  }
}

// Packed rows: zeros in out's rows past the real ones (the bucket's
// fillers), every head's columns; the grid strides over them.
template <typename Y>
__global__ void ZeroPackedFillers(Y* out, AttentionStrides strides,
                                  int64_t heads, int64_t head_dim,
                                  const int64_t* __restrict__ pack,
                                  int64_t packed_rows, int64_t padded) {
  __shared__ int64_t real;
  if (threadIdx.x < 32) {  // the real rows: those before the first at padded
    const int64_t count =
        SearchPackedRow(pack, packed_rows, padded, padded, WarpBallot{});
    if (threadIdx.x == 0) real = count;
  }
  __syncthreads();
  const int64_t row_items = heads * head_dim;
  const int64_t items = (packed_rows - real) * row_items;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < items;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = real + i / row_items;
    const int64_t h = i % row_items / head_dim;
    out[r * strides.row + h * strides.head + i % head_dim] = FromFloat<Y>(0.0f);
  }
}

// Rows of a view as the kernel reads them: the batch's, or packed rows
// (every row of the view, batch stride unused).
bool VectorRows(const AttentionArgs& a, const AttentionSource& x, int64_t rows,
                int64_t element_bytes) {
  const AttentionShape& n = a.shape;
  const bool packed = a.pack != nullptr;
  const int64_t strides[3] = {packed ? 0 : x.strides.batch, x.strides.head,
                              x.strides.row};
  const int64_t extents[3] = {packed ? 1 : n.batch, n.heads,
                              packed ? a.packed_rows : rows};
  return CanLoadRowsAsVectors(reinterpret_cast<uintptr_t>(x.data.data),
                              element_bytes, strides, extents, n.head_dim);
}

// The requirements of attention.h, and non-negative sizes. A head_dim of 1
// is contiguous whatever its stride (the kernel reads no column stride of
// q, k, v or out).
bool ValidAttention(const AttentionArgs& a) {
  const AttentionShape& n = a.shape;
  if (n.batch < 0 || n.heads < 0 || n.q_len < 0 || n.kv_len < 0 ||
      n.head_dim < 0 || n.head_dim > kMaxAttentionHeadDim) {
    return false;
  }
  if (a.k.data.storage != a.q.data.storage ||
      a.v.data.storage != a.q.data.storage) {
    return false;
  }
  if (a.pack != nullptr && (n.q_len != n.kv_len || a.packed_rows < 1)) {
    return false;
  }
  return n.head_dim <= 1 || (a.q.strides.col == 1 && a.k.strides.col == 1 &&
                             a.v.strides.col == 1 && a.out.strides.col == 1);
}

// The register path where asked for and compiled: 16-bit operands, padded
// head dims up to 128 (the accumulator's kD / 2 registers a lane).
template <typename T, int kD>
constexpr bool kHasRegisterPath = sizeof(T) == 2 && kD <= 128;

template <typename T, typename M, typename Y, int kD>
cudaError_t LaunchPadded(const AttentionArgs& a, cudaStream_t stream) {
  using Tl = Tiles<T, kD>;
  const AttentionShape& n = a.shape;
  AttentionParams<T, M, Y> p;
  p.q = static_cast<const T*>(a.q.data.data);
  p.k = static_cast<const T*>(a.k.data.data);
  p.v = static_cast<const T*>(a.v.data.data);
  p.mask = static_cast<const M*>(a.mask.data.data);
  p.out = static_cast<Y*>(a.out.data.data);
  p.q_strides = a.q.strides;
  p.k_strides = a.k.strides;
  p.v_strides = a.v.strides;
  p.mask_strides = a.mask.strides;
  p.out_strides = a.out.strides;
  p.shape = n;
  p.q_tiles = (n.q_len + Tl::kRowsQ - 1) / Tl::kRowsQ;
  p.blocks = p.q_tiles * n.heads * n.batch;
  p.scale = a.scale;
  p.zero_masked_rows = ZeroMaskedRows(a.zero_masked_rows, n.kv_len);
  p.vector_q = VectorRows(a, a.q, n.q_len, sizeof(T));
  p.vector_k = VectorRows(a, a.k, n.kv_len, sizeof(T));
  p.vector_v = VectorRows(a, a.v, n.kv_len, sizeof(T));
  p.pack = a.pack;
  p.packed_rows = a.packed_rows;

  auto kernel = AttentionKernel<T, M, Y, kD, false>;
  int bytes = Tl::kBytes;
  if constexpr (kHasRegisterPath<T, kD>) {
    if (a.registers) {
      kernel = AttentionKernel<T, M, Y, kD, true>;
      bytes = Tl::kRegisterBytes;
    }
  }
  if (bytes > 48 * 1024) {
    const cudaError_t error = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (error != cudaSuccess) return error;
  }
  // Blocks past 2^31 - 1 (never in practice) loop in the kernel.
  const int64_t grid = p.blocks < 2147483647 ? p.blocks : 2147483647;
  kernel<<<static_cast<unsigned>(grid), Tl::kThreads, bytes, stream>>>(p);
  if (a.pack == nullptr) return cudaGetLastError();
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  constexpr int kFillThreads = 256;
  static_assert(kFillThreads % 32 == 0, "ZeroPackedFillers' first warp");
  const int64_t items = a.packed_rows * n.heads * n.head_dim;
  const int64_t fill_blocks =
      std::min<int64_t>((items + kFillThreads - 1) / kFillThreads, 1024);
  ZeroPackedFillers<Y>
      <<<static_cast<unsigned>(fill_blocks), kFillThreads, 0, stream>>>(
          p.out, a.out.strides, n.heads, n.head_dim, a.pack, a.packed_rows,
          n.batch * n.q_len);
  return cudaGetLastError();
}

template <typename T, typename M, typename Y>
cudaError_t LaunchTyped(const AttentionArgs& a, cudaStream_t stream) {
  switch (AttentionPaddedHeadDim(a.shape.head_dim)) {
    case 32:
      return LaunchPadded<T, M, Y, 32>(a, stream);
    case 64:
      return LaunchPadded<T, M, Y, 64>(a, stream);
    case 128:
      return LaunchPadded<T, M, Y, 128>(a, stream);
    case 256:
      return LaunchPadded<T, M, Y, 256>(a, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

// kv_len 0 (with rows to write) launches: out is then 0, what the MatMul of
// an exported graph gives over an empty axis (ZeroMaskedRows).
cudaError_t LaunchAttention(const AttentionArgs& args, cudaStream_t stream) {
  if (!ValidAttention(args)) return cudaErrorInvalidValue;
  const AttentionShape& n = args.shape;
  if (n.batch == 0 || n.heads == 0 || n.q_len == 0 || n.head_dim == 0) {
    return cudaSuccess;  // out is empty
  }
  return WithFloatTypes(
      [&](auto t_tag, auto m_tag, auto y_tag) {
        return LaunchTyped<decltype(t_tag), decltype(m_tag), decltype(y_tag)>(
            args, stream);
      },
      args.q.data.storage, args.mask.data.storage, args.out.data.storage);
}

}  // namespace coalesce::kernels::cuda
