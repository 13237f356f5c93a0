// CudaKernels: the class behind CreateCudaKernels (cuda_kernels.h), shared
// by the files that define its primitives:
//   cuda_kernels.cc           construction, GEMM and convolution dispatch,
//                             the float32 elementwise and normalization
//                             kernels;
//   cuda_kernels_typed.cc     typed elementwise, Where, Cast, Quantize,
//                             CumSum, ArgMax;
//   cuda_kernels_movement.cc  Transpose, Broadcast, StridedCopy, Pad,
//                             Resize, Copy2D and the gathers.
// GEMMs go to CudaGemm (cuda_gemm.h), convolutions to CudaConv
// (cuda_conv.h), everything else to kernels/cuda/ launchers.
//
// Owns a 32 MiB device workspace (shared by cuBLASLt and cuDNN), the GEMM
// runner and, from the first convolution on, the convolution runner. Used
// from one thread at a time. Each primitive validates its arguments first
// (engine/device/kernel_checks.h), then makes its device current; an error
// from either means nothing was enqueued.
#ifndef COALESCE_ENGINE_CUDA_CUDA_KERNELS_IMPL_H_
#define COALESCE_ENGINE_CUDA_CUDA_KERNELS_IMPL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_conv.h"
#include "engine/cuda/cuda_device.h"
#include "engine/cuda/cuda_gemm.h"
#include "engine/cuda/cuda_status.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

// Device memory from cudaMalloc, freed with cudaFree.
struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using CudaMemory = std::unique_ptr<void, CudaFree>;

class CudaKernels : public DeviceKernels {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  CudaKernels(std::shared_ptr<CudaDevice> device, const CublasLt& lt,
              const DeviceKernelOptions& options);
  ~CudaKernels() override;

  // The cuBLASLt handle and the workspace, on the device.
  absl::Status Init();

  std::string description() const override;

  absl::Status Gemm(DeviceStream& stream, const GemmArgs& args) override;
  absl::Status Activation(DeviceStream& stream, ActivationSpec f,
                          const float* x, float* y, int64_t count) override;
  absl::Status Binary(DeviceStream& stream, const BinaryArgs& args) override;
  absl::Status Softmax(DeviceStream& stream, const float* x, float* y,
                       int64_t rows, int64_t cols) override;
  absl::Status Transpose(DeviceStream& stream,
                         const TransposeArgs& args) override;
  absl::Status Broadcast(DeviceStream& stream,
                         const BroadcastArgs& args) override;
  absl::Status LayerNorm(DeviceStream& stream,
                         const LayerNormArgs& args) override;
  absl::Status Gather(DeviceStream& stream, const GatherArgs& args) override;
  absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                      int64_t count) override;
  absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                        int64_t count) override;
  absl::Status Typed(DeviceStream& stream, const TypedArgs& args) override;
  absl::Status Where(DeviceStream& stream, const WhereArgs& args) override;
  absl::Status Cast(DeviceStream& stream, const CastArgs& args) override;
  absl::Status StridedCopy(DeviceStream& stream,
                           const StridedCopyArgs& args) override;
  absl::Status Pad(DeviceStream& stream, const PadArgs& args) override;
  absl::Status Quantize(DeviceStream& stream,
                        const QuantizeArgs& args) override;
  absl::Status Resize(DeviceStream& stream, const ResizeArgs& args) override;
  absl::Status GatherNd(DeviceStream& stream,
                        const GatherNdArgs& args) override;
  absl::Status GatherElements(DeviceStream& stream,
                              const GatherElementsArgs& args) override;
  absl::Status CumSum(DeviceStream& stream, const CumSumArgs& args) override;
  absl::Status ArgMax(DeviceStream& stream, const ArgMaxArgs& args) override;
  absl::Status Conv2D(DeviceStream& stream, const ConvArgs& args) override;
  absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                      const float* x, float* y) override;
  absl::Status Lrn(DeviceStream& stream, const LrnArgs& args) override;
  absl::Status ChannelAffine(DeviceStream& stream,
                             const ChannelAffineArgs& args) override;
  absl::Status Copy2D(DeviceStream& stream, const Copy2DArgs& args) override;

 private:
  // Makes the device current on the calling thread.
  absl::Status Current() const;
  // Current(), then the error `launch()` returns as a Status naming `what`.
  template <typename Launch>
  absl::Status Enqueue(Launch launch, const char* what) const {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(launch(), what);
  }
  // Enqueue after an argument check (kernel_checks.h): its error, or
  // launch(count) with the element count it returned.
  template <typename Launch>
  absl::Status EnqueueChecked(const absl::StatusOr<int64_t>& count,
                              Launch launch, const char* what) const {
    if (!count.ok()) return count.status();
    return Enqueue([&] { return launch(*count); }, what);
  }
  template <typename Launch>
  absl::Status EnqueueChecked(const absl::Status& check, Launch launch,
                              const char* what) const {
    if (!check.ok()) return check;
    return Enqueue(launch, what);
  }
  // What a convolution cuDNN did not fuse: widening y_half, adding z, the
  // bias and the activation.
  absl::Status ConvEpilogue(DeviceStream& stream, const ConvArgs& args);

  const std::shared_ptr<CudaDevice> device_;
  const CublasLt& lt_;
  const bool tf32_;
  CudaMemory workspace_;
  std::unique_ptr<CudaGemm> gemm_;
  std::unique_ptr<CudaConv> conv_;  // made by the first convolution
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_KERNELS_IMPL_H_
