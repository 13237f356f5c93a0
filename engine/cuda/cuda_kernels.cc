// CudaKernels' construction, GEMM and convolution dispatch, and the float32
// elementwise and normalization primitives (cuda_kernels_impl.h).
#include "engine/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_kernels_impl.h"
#include "engine/cuda/cuda_status.h"
#include "engine/device/kernel_args.h"
#include "engine/device/kernel_checks.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/half.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/softmax.h"

namespace coalesce {

namespace kc = kernels::cuda;

CudaKernels::CudaKernels(std::shared_ptr<CudaDevice> device, const CublasLt& lt,
                         const DeviceKernelOptions& options)
    : device_(std::move(device)),
      lt_(lt),
      tf32_(options.precision == DevicePrecision::kTf32) {}

// The members free their handles and memory with the device current.
CudaKernels::~CudaKernels() { cudaSetDevice(device_->ordinal()); }

absl::Status CudaKernels::Init() {
  if (absl::Status s = Current(); !s.ok()) return s;
  auto gemm = CudaGemm::Create(lt_, tf32_, kWorkspaceBytes);
  if (!gemm.ok()) return gemm.status();
  gemm_ = *std::move(gemm);
  void* workspace = nullptr;
  absl::Status s = CudaStatus(cudaMalloc(&workspace, kWorkspaceBytes),
                              "cudaMalloc (cuBLASLt workspace)");
  workspace_.reset(workspace);
  return s;
}

std::string CudaKernels::description() const {
  return absl::StrCat("cuBLASLt ", lt_.version, " (", lt_.path, "), ",
                      tf32_ ? "TF32 allowed" : "exact FP32");
}

absl::Status CudaKernels::Current() const {
  return CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
}

absl::Status CudaKernels::Gemm(DeviceStream& stream, const GemmArgs& args) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return absl::OkStatus();
  if (absl::Status s = Current(); !s.ok()) return s;
  bool fused = false;
  absl::Status s =
      gemm_->Run(args, workspace_.get(), CudaStreamOf(stream), &fused);
  if (!s.ok() || fused) return s;
  const int64_t count = ((args.batch - 1) * args.stride_c + args.m * args.n);
  return Activation(stream, args.activation, args.c, args.c, count);
}

absl::Status CudaKernels::Conv2D(DeviceStream& stream, const ConvArgs& args) {
  if (absl::Status s = Current(); !s.ok()) return s;
  if (conv_ == nullptr) {  // cuDNN is loaded by the first convolution
    auto conv = CudaConv::Create(tf32_, kWorkspaceBytes);
    if (!conv.ok()) return conv.status();
    conv_ = *std::move(conv);
  }
  bool fused = false;
  absl::Status s =
      conv_->Run(args, workspace_.get(), CudaStreamOf(stream), &fused);
  if (!s.ok() || fused) return s;
  return ConvEpilogue(stream, args);
}

absl::Status CudaKernels::ConvEpilogue(DeviceStream& stream,
                                       const ConvArgs& args) {
  const int64_t count = args.n * args.m * args.out_h * args.out_w;
  if (args.y_half != nullptr) {
    if (absl::Status s = FromHalf(stream, args.y_half, args.y, count); !s.ok())
      return s;
  }
  if (args.z != nullptr) {
    absl::Status s = Binary(stream, {.op = DeviceBinaryOp::kAdd,
                                     .a = args.y,
                                     .a_shape = {count},
                                     .b = args.z,
                                     .b_shape = {count},
                                     .y = args.y});
    if (!s.ok()) return s;
  }
  if (args.bias == nullptr &&
      args.activation.kind == DeviceActivation::kIdentity) {
    return absl::OkStatus();
  }
  return ChannelAffine(stream, {.x = args.y,
                                .shift = args.bias,
                                .y = args.y,
                                .batch = args.n,
                                .channels = args.m,
                                .spatial = args.out_h * args.out_w,
                                .activation = args.activation});
}

absl::Status CudaKernels::Activation(DeviceStream& stream, ActivationSpec f,
                                     const float* x, float* y, int64_t count) {
  return Enqueue(
      [&] {
        return kc::LaunchActivation(ToKernel(f.kind), f.alpha, f.beta, x, y,
                                    count, CudaStreamOf(stream));
      },
      "activation kernel");
}

absl::Status CudaKernels::Binary(DeviceStream& stream, const BinaryArgs& a) {
  kc::BroadcastIndexer ix;
  return EnqueueChecked(
      CheckBinary(a, &ix),
      [&](int64_t n) {
        return kc::LaunchBinary(ToKernel(a.op), ix, a.a, a.b, a.y, n,
                                CudaStreamOf(stream));
      },
      "binary kernel");
}

absl::Status CudaKernels::Softmax(DeviceStream& stream, const float* x,
                                  float* y, int64_t rows, int64_t cols) {
  return Enqueue(
      [&] { return kc::LaunchSoftmax(x, y, rows, cols, CudaStreamOf(stream)); },
      "softmax kernel");
}

absl::Status CudaKernels::LayerNorm(DeviceStream& stream,
                                    const LayerNormArgs& a) {
  return Enqueue(
      [&] {
        return kc::LaunchLayerNorm(a.x, a.scale, a.bias, a.y, a.rows, a.cols,
                                   a.epsilon, CudaStreamOf(stream));
      },
      "layer norm kernel");
}

absl::Status CudaKernels::ToHalf(DeviceStream& stream, const float* x, Half* y,
                                 int64_t count) {
  return Enqueue(
      [&] { return kc::LaunchToHalf(x, y, count, CudaStreamOf(stream)); },
      "float16 conversion kernel");
}

absl::Status CudaKernels::FromHalf(DeviceStream& stream, const Half* x,
                                   float* y, int64_t count) {
  return Enqueue(
      [&] { return kc::LaunchFromHalf(x, y, count, CudaStreamOf(stream)); },
      "float32 conversion kernel");
}

absl::Status CudaKernels::Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                                 const float* x, float* y) {
  return Enqueue(
      [&] {
        return kc::LaunchPool2D(ToGeometry(args), x, y, args.planes,
                                CudaStreamOf(stream));
      },
      "pooling kernel");
}

absl::Status CudaKernels::Lrn(DeviceStream& stream, const LrnArgs& a) {
  return Enqueue(
      [&] {
        return kc::LaunchLrn(a.x, a.y, a.batch, a.channels, a.spatial, a.size,
                             a.alpha, a.beta, a.bias, CudaStreamOf(stream));
      },
      "LRN kernel");
}

absl::Status CudaKernels::ChannelAffine(DeviceStream& stream,
                                        const ChannelAffineArgs& a) {
  return Enqueue(
      [&] {
        return kc::LaunchChannelAffine(
            a.x, a.scale, a.shift, a.y, a.batch, a.channels, a.spatial,
            ToKernel(a.activation.kind), a.activation.alpha, a.activation.beta,
            CudaStreamOf(stream));
      },
      "per-channel kernel");
}

absl::StatusOr<std::unique_ptr<DeviceKernels>> CreateCudaKernels(
    std::shared_ptr<CudaDevice> device, const DeviceKernelOptions& options) {
  auto lt = LoadCublasLt();
  if (!lt.ok()) return lt.status();
  auto kernels =
      std::make_unique<CudaKernels>(std::move(device), **lt, options);
  if (absl::Status s = kernels->Init(); !s.ok()) return s;
  return std::unique_ptr<DeviceKernels>(std::move(kernels));
}

}  // namespace coalesce
