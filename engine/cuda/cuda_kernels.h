// CudaKernels: DeviceKernels (engine/device/device_kernels.h) on one CUDA
// GPU. GEMMs run through cuBLASLt (loaded at run time, cublaslt_library.h;
// cuda_gemm.h) in exact float32 (CUBLAS_COMPUTE_32F: no TF32; TF32 only
// when the options ask for it, per model), with the bias and Relu fused as
// cuBLASLt epilogues; convolutions through cuDNN (loaded at the first one;
// cuda_conv.h); everything else through kernels/cuda/.
//
// GELU is not fused: cuBLASLt's GELU epilogue is the tanh approximation,
// and ONNX exports use the erf form, so GeluErf runs as its own kernel
// (kGeluTanh is fused). One instance per executor instance: it owns a
// cuBLASLt handle, a 32 MiB workspace and the prepared descriptors and
// chosen algorithm of every GEMM and convolution shape it has run (RAII
// owners, library_handles.h), and is used from one thread at a time. The
// class is in cuda_kernels_impl.h. Part of libcoalesce_cuda.so only.
#ifndef COALESCE_ENGINE_CUDA_CUDA_KERNELS_H_
#define COALESCE_ENGINE_CUDA_CUDA_KERNELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/cuda/cuda_device.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

// FailedPrecondition when cuBLASLt cannot be loaded; the CUDA or cuBLAS
// error when the handle or workspace cannot be created.
absl::StatusOr<std::unique_ptr<DeviceKernels>> CreateCudaKernels(
    std::shared_ptr<CudaDevice> device, const DeviceKernelOptions& options);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_KERNELS_H_
