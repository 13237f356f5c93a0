// Single-precision matrix multiply on row-major matrices:
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T.
// op(A) is M x K, op(B) is K x N, C is M x N. Large products go to oneDNN's
// sgemm (threaded per kernels/cpu/threading.h); tiny ones use a direct loop.
// Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_GEMM_H_
#define COALESCE_KERNELS_CPU_GEMM_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace coalesce::kernels {

struct GemmParams {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  // Leading dimensions (row strides in elements); 0 means "packed".
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
};

// REQUIRES: a, b, c hold the matrices described by `params`. When beta == 0,
// c's prior contents are ignored (NaNs included). Returns Internal if oneDNN
// fails.
absl::Status Sgemm(const GemmParams& params, const float* a, const float* b,
                   float* c);

// One entry of SgemmBatch: its matrices.
struct GemmOperands {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
};

// `count` independent products of the same `params`, entry i's matrices
// given by operands(i) (called once per entry, from any of the calling
// thread's OpenMP threads). Small products (a batched MatMul's per-head
// attention products) run one per thread, each single-threaded, in one
// parallel region, instead of one parallel region each; large ones run one
// after the other, each threaded. The first error is returned (entries after
// it may still have run).
absl::Status SgemmBatch(const GemmParams& params, int64_t count,
                        absl::FunctionRef<GemmOperands(int64_t)> operands);

// Fills the M x N matrix y with c broadcast from c_rows x c_cols, where
// c_rows is 1 or M and c_cols is 1 or N.
void BroadcastToMatrix(const float* c, int64_t c_rows, int64_t c_cols,
                       int64_t m, int64_t n, float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_GEMM_H_
