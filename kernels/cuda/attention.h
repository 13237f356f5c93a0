// CUDA fused scaled-dot-product attention (issue 27's fused attention):
//   out[b, h, i, :] = sum_j p[b, h, i, j] v[b, h, j, :]
//   p[b, h, i, :]   = softmax_j(scale * q[b, h, i, :] . k[b, h, j, :]
//                               + mask[b, h, i, j])
// for b < batch, h < heads, i < q_len, j < kv_len, head_dim elements per
// row. Every operand is a strided view of a device array (element strides
// per axis, so the head split and merge of an exported graph are strides
// here, not transposes); the mask's strides may be 0 (broadcast), and a null
// mask means none. The softmax's max and sum and every accumulation are
// float32 whatever the storage (float_storage.h); out is rounded once.
// A row whose scores are all -inf (a fully masked row) gives 0 when
// zero_masked_rows (what PyTorch's exported SDPA computes with its
// IsNaN/Where guard), else NaN (plain Softmax's 0/0).
// REQUIRES: q, k, v the same storage; the head_dim axis contiguous
// (stride 1) in q, k, v and out; head_dim <= kMaxAttentionHeadDim; out
// overlapping no input. Enqueues its kernels on `stream` and returns the
// launch's error (cudaErrorInvalidValue when a requirement fails).
#ifndef COALESCE_KERNELS_CUDA_ATTENTION_H_
#define COALESCE_KERNELS_CUDA_ATTENTION_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

inline constexpr int64_t kMaxAttentionHeadDim = 256;

struct AttentionShape {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
};

// Element strides of a 4-D view [batch, heads, rows, cols]: for q, k, v and
// out, rows are sequence positions and cols the head dimension; for the
// mask, rows are query and cols key positions.
struct AttentionStrides {
  int64_t batch = 0, head = 0, row = 0, col = 1;
};

struct AttentionSource {
  FloatSource data;
  AttentionStrides strides;
};

struct AttentionTarget {
  FloatTarget data;
  AttentionStrides strides;
};

struct AttentionArgs {
  AttentionShape shape;
  AttentionSource q, k, v;
  AttentionSource mask;  // data.data null: no mask
  AttentionTarget out;
  float scale = 1.0f;
  bool zero_masked_rows = false;
  // 16-bit q, k and v with a head_dim up to 128: each warp keeps its
  // scores, weights and output accumulator in registers (mma.sync,
  // FlashAttention 2's loop) instead of shared memory. The same math, in
  // another order of float32 additions. Opt-in until a GPU has compared
  // the two (engine/cuda/cuda_kernels.cc).
  bool registers = false;
  // Packed rows (token packing), when `pack` is set: q, k, v and out are
  // views of packed_rows rows (batch strides unused), and batch entry b's
  // rows are those SearchPackedRow (attention_math.h)
  // find in the device int64 pack index `pack` (packed_rows entries) of a
  // [batch, q_len] mask: as many queries as keys (q_len must equal
  // kv_len), the mask read at each row's position in its sequence (a
  // tile's keys past its rows' last unmasked one skipped, as padded). Out's
  // rows past the real ones (the bucket's fillers) are written as zeros, by a
  // second kernel on `stream`.
  const int64_t* pack = nullptr;
  int64_t packed_rows = 0;
};

cudaError_t LaunchAttention(const AttentionArgs& args, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_ATTENTION_H_
