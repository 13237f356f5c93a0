#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/threading.h"
#include "oneapi/dnnl/dnnl.h"

namespace coalesce::kernels {
namespace {

// Below this many multiply-adds, oneDNN's dispatch costs more than it saves.
constexpr int64_t kSmallGemmFlops = 4096;

// Up to this many multiply-adds a product, SgemmBatch runs entries in
// parallel rather than threading each (bert-base's attention products at
// sequence 384 are 9.4M).
constexpr int64_t kBatchEntryMacs = int64_t{16} << 20;

// Direct loop; the inner loop runs over contiguous C and (for !trans_b) B.
void SmallSgemm(const GemmParams& p, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < p.m; ++i) {
    float* c_row = c + i * p.ldc;
    if (p.beta == 0.0f) {
      std::fill(c_row, c_row + p.n, 0.0f);
    } else if (p.beta != 1.0f) {
      for (int64_t j = 0; j < p.n; ++j) c_row[j] *= p.beta;
    }
    for (int64_t l = 0; l < p.k; ++l) {
      const float a_il =
          p.alpha * (p.trans_a ? a[l * p.lda + i] : a[i * p.lda + l]);
      if (!p.trans_b) {
        const float* b_row = b + l * p.ldb;
        for (int64_t j = 0; j < p.n; ++j) c_row[j] += a_il * b_row[j];
      } else {
        for (int64_t j = 0; j < p.n; ++j) c_row[j] += a_il * b[j * p.ldb + l];
      }
    }
  }
}

}  // namespace

absl::Status Sgemm(const GemmParams& params, const float* a, const float* b,
                   float* c) {
  GemmParams p = params;
  if (p.lda == 0) p.lda = p.trans_a ? p.m : p.k;
  if (p.ldb == 0) p.ldb = p.trans_b ? p.k : p.n;
  if (p.ldc == 0) p.ldc = p.n;
  if (p.m == 0 || p.n == 0) return absl::OkStatus();
  if (p.k == 0 || p.m * p.n * p.k < kSmallGemmFlops) {
    SmallSgemm(p, a, b, c);
    return absl::OkStatus();
  }
  // oneDNN ignores C when beta == 0 as BLAS does.
  const dnnl_status_t status =
      dnnl_sgemm(p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k,
                 p.alpha, a, p.lda, b, p.ldb, p.beta, c, p.ldc);
  if (status != dnnl_success) {
    return absl::InternalError(absl::StrCat("dnnl_sgemm failed with status ",
                                            static_cast<int>(status)));
  }
  return absl::OkStatus();
}

absl::Status SgemmBatch(const GemmParams& params, int64_t count,
                        absl::FunctionRef<GemmOperands(int64_t)> operands) {
  const int threads = IntraOpThreads();
  if (count < 2 || threads < 2 || count < threads ||
      params.m * params.n * params.k > kBatchEntryMacs) {
    for (int64_t i = 0; i < count; ++i) {
      const GemmOperands o = operands(i);
      if (absl::Status s = Sgemm(params, o.a, o.b, o.c); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  std::atomic<bool> failed{false};
  absl::Status first_error;
  // Inside the region oneDNN runs each product on its calling thread
  // (nested regions are inactive).
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    if (failed.load(std::memory_order_relaxed)) continue;
    const GemmOperands o = operands(i);
    absl::Status s = Sgemm(params, o.a, o.b, o.c);
    if (!s.ok() && !failed.exchange(true)) first_error = std::move(s);
  }
  return first_error;
}

void BroadcastToMatrix(const float* c, int64_t c_rows, int64_t c_cols,
                       int64_t m, int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* src = c + (c_rows == 1 ? 0 : i * c_cols);
    float* dst = y + i * n;
    if (c_cols == 1) {
      std::fill(dst, dst + n, src[0]);
    } else {
      std::copy(src, src + n, dst);
    }
  }
}

}  // namespace coalesce::kernels
