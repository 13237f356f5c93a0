// CudnnSdpa: a fused attention (AttentionArgs, engine/device/device_kernels.h)
// as cuDNN's scaled-dot-product attention (its FlashAttention-2 kernels),
// built with NVIDIA's cuDNN frontend (header-only; CMake fetches the pinned
// version, engine/cuda/CMakeLists.txt). docs/device-pipeline.md ("Fused
// attention") says when it runs instead of our own kernel.
//
// Which attentions it takes is SdpaLayoutOf's rule (sdpa_layout.h); a
// float32 mask is converted to q's 16-bit type first, into device memory
// the graph owns (one array per graph, never freed before this object:
// captured CUDA graphs keep its address). Pointers must be 16-byte aligned.
//
// A graph is built at the first Run of its key (SdpaKey: every shape,
// stride and the scale), never while `stream` is capturing; a graph cuDNN
// does not support, one needing more workspace than the caller has, or a
// first execution that fails, is remembered as unsupported for its key.
// Each key is reported once on stderr: "coalesce: cuDNN SDPA runs <key>"
// after its first execution, or "... not used for <key>: <cuDNN's reason>";
// each reason SdpaLayoutOf or alignment gives, once: "... not used: <why>"
// (this path is opt-in; the lines are what the GPU session counts).
//
// Loading: cuDNN through cudnn_library.h (the frontend is told its handle,
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING), and the frontend's few CUDA
// runtime calls through libcudart.so.13, found as library_search.h says and
// loaded before the frontend asks for it by name.
//
// Not thread-safe: one per CudaKernels, called from one thread at a time
// with its device current. Errors: Unimplemented as above (the caller runs
// our kernel; nothing was enqueued); a later execution's failure as
// Internal; a conversion kernel's launch error as CudaStatus says.
#ifndef COALESCE_ENGINE_CUDA_CUDNN_SDPA_H_
#define COALESCE_ENGINE_CUDA_CUDNN_SDPA_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

struct SdpaLayout;

class CudnnSdpa {
 public:
  // Loads cuDNN and the CUDA runtime library for the frontend, and creates
  // a handle on the current device. FailedPrecondition when either library
  // is missing; cuDNN's error creating the handle.
  static absl::StatusOr<std::unique_ptr<CudnnSdpa>> Create();
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Enqueues the attention of `a` on `stream` with `workspace` (device
  // memory of `workspace_bytes`, 16-byte aligned). REQUIRES:
  // CheckAttention(a) (engine/device/kernel_checks.h) passed.
  absl::Status Run(cudaStream_t stream, const AttentionArgs& a, void* workspace,
                   size_t workspace_bytes);

 private:
  struct Graph;  // one key's frontend graph, or why there is none
  CudnnSdpa(const Cudnn& dnn, cudnnHandle_t handle);
  std::unique_ptr<Graph> Build(const SdpaLayout& layout, float scale,
                               size_t workspace_bytes) const;
  absl::Status Execute(Graph& g, cudaStream_t stream, const AttentionArgs& a,
                       const SdpaLayout& layout, void* workspace);

  // `why` (Unimplemented), its message written to stderr the first time.
  absl::Status Refused(absl::Status why);

  const Cudnn& dnn_;
  cudnnHandle_t handle_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;  // by SdpaKey
  std::set<std::string> refusals_;  // reasons already reported
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDNN_SDPA_H_
