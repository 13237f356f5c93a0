// CudaConv: DeviceKernels::Conv2D (engine/device/device_kernels.h) on cuDNN
// 9's legacy API (cudnn_library.h), for CudaKernels (cuda_kernels_impl.h).
// FP32 with FMA math (no TF32 unless allowed), or float16 tensors with
// float32 accumulation on tensor cores. A residual convolution with a bias
// and Relu or no activation (ResNet's) runs as one
// cudnnConvolutionBiasActivationForward; any other runs alone and leaves
// its epilogue to the caller. Each shape's descriptors and algorithm (the
// first of cudnnGetConvolutionForwardAlgorithm_v7 that fits the workspace)
// are prepared once and cached.
//
// Owns its cuDNN handle and the prepared descriptors (RAII owners,
// library_handles.h); the caller owns the workspace. Not thread-safe: one
// per CudaKernels, called from one thread at a time, with its device
// current. Errors: cuDNN's (CudnnStatus, naming the algorithm and workspace
// at run time), FailedPrecondition when cuDNN cannot be loaded, Internal
// when no algorithm fits; on an error nothing was enqueued.
#ifndef COALESCE_ENGINE_CUDA_CUDA_CONV_H_
#define COALESCE_ENGINE_CUDA_CUDA_CONV_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/cuda/library_handles.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

// Everything that decides a convolution's descriptors and algorithm.
struct ConvKey {
  int64_t n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w, stride_h,
      stride_w, pad_top, pad_left, dilation_h, dilation_w, groups;
  bool half;  // float16 x, w and y (ConvArgs::x_half)
  // cudnnConvolutionBiasActivationForward's activation, or -1 where the
  // convolution runs alone (see cuda_conv.cc).
  int fused;
  auto Tie() const {
    return std::tie(n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w,
                    stride_h, stride_w, pad_top, pad_left, dilation_h,
                    dilation_w, groups, half, fused);
  }
  bool operator<(const ConvKey& o) const { return Tie() < o.Tie(); }
};

class PreparedConv;

class CudaConv {
 public:
  // Loads cuDNN (once per process) and creates a handle on the current
  // device. `workspace_bytes` is the size of the workspace every Run passes.
  static absl::StatusOr<std::unique_ptr<CudaConv>> Create(
      bool tf32, size_t workspace_bytes);
  ~CudaConv();
  CudaConv(const CudaConv&) = delete;
  CudaConv& operator=(const CudaConv&) = delete;

  // Enqueues args' convolution on `stream`. `*fused` says whether it also
  // added the bias and residual and applied the activation; otherwise y
  // (y_half in FP16 mode) holds the bare convolution.
  absl::Status Run(const ConvArgs& args, void* workspace, cudaStream_t stream,
                   bool* fused);

 private:
  CudaConv(const Cudnn& dnn, bool tf32, size_t workspace_bytes);

  const Cudnn& dnn_;
  const bool tf32_;
  const size_t workspace_bytes_;
  DnnHandle handle_;
  std::map<ConvKey, std::unique_ptr<PreparedConv>> prepared_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_CONV_H_
