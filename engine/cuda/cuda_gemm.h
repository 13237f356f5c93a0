// CudaGemm: DeviceKernels::Gemm (engine/device/device_kernels.h) on
// cuBLASLt, for CudaKernels (cuda_kernels_impl.h). Row-major
// C = op(A) op(B) runs as column-major C^T = op(B)^T op(A)^T, in exact
// float32 (CUBLAS_COMPUTE_32F) unless TF32 is allowed, or with float16 A and
// B accumulating in float32 and writing float32 or float16 C (the bias then
// of C's type); the bias and Relu (and GeluTanh) are fused as cuBLASLt
// epilogues, applied in float32 before C is rounded. Each shape's
// descriptors and the heuristic's algorithm are prepared once and cached.
//
// Owns its cuBLASLt handle and the prepared descriptors (RAII owners,
// library_handles.h); the caller owns the workspace. Not thread-safe: one
// per CudaKernels, called from one thread at a time, with its device
// current. Errors: cuBLASLt's (CublasStatus), or Internal when no algorithm
// fits; on an error nothing was enqueued. The caller refuses operand types
// GemmArgs does not allow first (CheckGemmOperands).
#ifndef COALESCE_ENGINE_CUDA_CUDA_GEMM_H_
#define COALESCE_ENGINE_CUDA_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/library_handles.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

// Everything that decides a GEMM's descriptors and algorithm.
struct GemmKey {
  int64_t m, n, k, batch, stride_a, stride_b, stride_c;
  bool trans_a, trans_b;
  cublasLtEpilogue_t epilogue;
  uint32_t alignment;   // bytes, of every matrix (see cuda_gemm.cc)
  DeviceFloat ab_type;  // A and B: float32, or GemmArgs::half_type
  DeviceFloat c_type;   // C and D, and bias (GemmArgs::c)
  bool half() const { return ab_type != DeviceFloat::kFloat; }
  auto Tie() const {
    return std::tie(m, n, k, batch, stride_a, stride_b, stride_c, trans_a,
                    trans_b, epilogue, alignment, ab_type, c_type);
  }
  bool operator<(const GemmKey& o) const { return Tie() < o.Tie(); }
};

// InvalidArgument unless args' operand types are ones GemmArgs allows:
// a_half and b_half both set or both null, of a 16-bit half_type; c
// float32, or 16-bit only of the operands' type; a bias of c's type.
absl::Status CheckGemmOperands(const GemmArgs& args);

class PreparedGemm;

class CudaGemm {
 public:
  // A handle on the current device. `workspace_bytes` is the size of the
  // workspace every Run passes.
  static absl::StatusOr<std::unique_ptr<CudaGemm>> Create(
      const CublasLt& lt, bool tf32, size_t workspace_bytes);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;

  // Enqueues args' product on `stream`, with its bias and, when cuBLASLt
  // fuses it, its activation; `*fused` says whether it did (otherwise the
  // caller applies args.activation to C, in C's type).
  // REQUIRES: CheckGemmOperands(args) is OK.
  absl::Status Run(const GemmArgs& args, void* workspace, cudaStream_t stream,
                   bool* fused);

 private:
  CudaGemm(const CublasLt& lt, bool tf32, size_t workspace_bytes);

  const CublasLt& lt_;
  const bool tf32_;
  const size_t workspace_bytes_;
  LtHandle handle_;
  std::map<GemmKey, std::unique_ptr<PreparedGemm>> prepared_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_GEMM_H_
