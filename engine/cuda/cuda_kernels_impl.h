// CudaKernels: the class behind CreateCudaKernels (cuda_kernels.h), shared
// by the files that define its primitives:
//   cuda_kernels.cc           construction, GEMM and convolution dispatch,
//                             the elementwise and normalization kernels
//                             (float32 or float16 operands, FloatIn and
//                             FloatOut: engine/device/kernel_args.h);
//   cuda_kernels_typed.cc     typed elementwise, Where, Cast, Quantize,
//                             CumSum, ArgMax;
//   cuda_kernels_movement.cc  Transpose, Broadcast, StridedCopy, Pad,
//                             Resize, Copy2D and the gathers.
// GEMMs go to CudaGemm (cuda_gemm.h); attentions to our kernel, or with
// COALESCE_CUDNN_SDPA=1 first to CudnnSdpa (cudnn_sdpa.h); float16 convolutions
// to CudnnGraphConv (cudnn_graph_conv.h: fused, engines timed and recorded in
// the options' TuningCache), and to CudaConv (cuda_conv.h) where it answers
// Unimplemented or cannot be created; float32 convolutions to CudaConv
// (legacy algorithms, timed and recorded in the same TuningCache);
// everything else to kernels/cuda/ launchers.
//
// Owns a 32 MiB device workspace (shared by cuBLASLt and cuDNN), the GEMM
// runner and, from the first convolution on, the convolution runners. Used
// from one thread at a time. Each primitive validates its arguments first
// (engine/device/kernel_checks.h; and here: a y aliasing an input of
// another storage type, an NHWC pooling's channel count, a convolution's
// operand types, CheckConvOperands, a GEMM's, CheckGemmOperands), then
// makes its device current; an error from either means nothing was
// enqueued.
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
#include "engine/cuda/cuda_memory.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/cudnn_graph_conv.h"
#include "engine/cuda/cudnn_sdpa.h"
#include "engine/device/device_kernels.h"
#include "engine/device/tuning_cache.h"

namespace coalesce {

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
  absl::Status Activation(DeviceStream& stream, ActivationSpec f, FloatIn x,
                          FloatOut y, int64_t count) override;
  absl::Status Binary(DeviceStream& stream, const BinaryArgs& args) override;
  absl::Status Softmax(DeviceStream& stream, FloatIn x, FloatOut y,
                       int64_t rows, int64_t cols) override;
  absl::Status Transpose(DeviceStream& stream,
                         const TransposeArgs& args) override;
  absl::Status Broadcast(DeviceStream& stream,
                         const BroadcastArgs& args) override;
  absl::Status LayerNorm(DeviceStream& stream,
                         const LayerNormArgs& args) override;
  absl::Status Gather(DeviceStream& stream, const GatherArgs& args) override;
  absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                      int64_t count, DeviceFloat type) override;
  absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                        int64_t count, DeviceFloat type) override;
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
  absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args, FloatIn x,
                      FloatOut y) override;
  absl::Status Lrn(DeviceStream& stream, const LrnArgs& args) override;
  absl::Status ChannelAffine(DeviceStream& stream,
                             const ChannelAffineArgs& args) override;
  absl::Status Copy2D(DeviceStream& stream, const Copy2DArgs& args) override;
  absl::Status Attention(DeviceStream& stream,
                         const AttentionArgs& args) override;

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
  // The fused-convolution runner, made at the first call (cuDNN is loaded
  // then); null when it could not be made, then and from then on.
  CudnnGraphConv* GraphConv();
  // cuDNN's attention when COALESCE_CUDNN_SDPA=1 (cuda_kernels.cc), made at
  // the first attention; null otherwise, or when it could not be made.
  CudnnSdpa* Sdpa();

  const std::shared_ptr<CudaDevice> device_;
  const CublasLt& lt_;
  const bool tf32_;
  const std::shared_ptr<TuningCache> tuning_cache_;  // may be null
  const bool attention_registers_;  // COALESCE_ATTENTION_REGISTERS=1
  CudaMemory workspace_;
  std::unique_ptr<CudaGemm> gemm_;
  std::unique_ptr<CudaConv> conv_;  // made by the first convolution
  // Made by the first float16 convolution; graph_conv_failed_ when it
  // could not be, and never tried again.
  std::unique_ptr<CudnnGraphConv> graph_conv_;
  bool graph_conv_failed_ = false;
  std::unique_ptr<CudnnSdpa> sdpa_;
  bool sdpa_failed_ = false;  // not asked for, or not available
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_KERNELS_IMPL_H_
