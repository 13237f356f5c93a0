// CudaKernels' construction, GEMM and convolution dispatch, and the
// elementwise and normalization primitives (cuda_kernels_impl.h), whose
// floating operands are float32, float16 or bfloat16
// (engine/device/kernel_args.h).
#include "engine/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_kernels_impl.h"
#include "engine/cuda/cuda_status.h"
#include "engine/device/kernel_args.h"
#include "engine/device/kernel_checks.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/half.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/softmax.h"

namespace coalesce {

namespace kc = kernels::cuda;

namespace {

// y may be an input only with that input's storage: a kernel reading one
// type and writing the other over the same array would overwrite elements
// before other threads read them.
absl::Status CheckAlias(FloatIn x, FloatOut y, const char* primitive) {
  if (x.data == nullptr || x.data != y.data || x.type == y.type)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(primitive, ": y is an input of another storage type"));
}

// NHWC planes interleave `channels` channels: a positive divisor of planes.
absl::Status CheckPoolLayout(const Pool2DArgs& a) {
  if (!a.channels_last || (a.channels > 0 && a.planes % a.channels == 0))
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("Pool2D: channels_last with ", a.channels,
                   " channels, not a divisor of ", a.planes, " planes"));
}

// COALESCE_ATTENTION_REGISTERS=1: our attention kernel's register path
// (kernels/cuda/attention.h), opt-in until a GPU run has compared it with
// the shared-memory one (docs/device-pipeline.md, "Fused attention").
bool AttentionOnRegisters() {
  const char* use = std::getenv("COALESCE_ATTENTION_REGISTERS");
  return use != nullptr && std::string_view(use) == "1";
}

}  // namespace

CudaKernels::CudaKernels(std::shared_ptr<CudaDevice> device, const CublasLt& lt,
                         const DeviceKernelOptions& options)
    : device_(std::move(device)),
      lt_(lt),
      tf32_(options.precision == DevicePrecision::kTf32),
      tuning_cache_(options.tuning_cache),
      attention_registers_(AttentionOnRegisters()) {}

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

// An activation cuBLASLt does not fuse runs on C in C's type (a float16 C
// is then rounded twice: by the product, and by the activation).
absl::Status CudaKernels::Gemm(DeviceStream& stream, const GemmArgs& args) {
  if (absl::Status s = CheckGemmOperands(args); !s.ok()) return s;
  if (args.m == 0 || args.n == 0 || args.batch == 0) return absl::OkStatus();
  if (absl::Status s = Current(); !s.ok()) return s;
  bool fused = false;
  absl::Status s =
      gemm_->Run(args, workspace_.get(), CudaStreamOf(stream), &fused);
  if (!s.ok() || fused) return s;
  const int64_t count = ((args.batch - 1) * args.stride_c + args.m * args.n);
  return Activation(stream, args.activation, FloatIn(args.c.data, args.c.type),
                    args.c, count);
}

// The operand types are checked before cuDNN is loaded, so that a bad call
// fails as InvalidArgument whether or not cuDNN is there.
absl::Status CudaKernels::Conv2D(DeviceStream& stream, const ConvArgs& args) {
  if (absl::Status s = CheckConvOperands(args); !s.ok()) return s;
  if (absl::Status s = Current(); !s.ok()) return s;
  // Float16: the fused graph, unless it answers Unimplemented.
  if (CudnnGraphConv* graph = args.x.is_16bit() ? GraphConv() : nullptr) {
    absl::Status s = graph->Run(CudaStreamOf(stream), args, workspace_.get(),
                                kWorkspaceBytes);
    if (!absl::IsUnimplemented(s)) return s;
  }
  if (conv_ == nullptr) {  // cuDNN is loaded by the first convolution
    auto conv = CudaConv::Create(device_->ordinal(),
                                 {.tf32 = tf32_,
                                  .workspace_bytes = kWorkspaceBytes,
                                  .tuning_cache = tuning_cache_});
    if (!conv.ok()) return conv.status();
    conv_ = *std::move(conv);
  }
  return conv_->Run(args, workspace_.get(), CudaStreamOf(stream));
}

namespace {

kc::AttentionStrides ToKernel(const std::array<int64_t, 4>& s) {
  return {.batch = s[0], .head = s[1], .row = s[2], .col = s[3]};
}

}  // namespace

absl::Status CudaKernels::Attention(DeviceStream& stream,
                                    const AttentionArgs& a) {
  if (absl::Status s = CheckAttention(a); !s.ok()) return s;
  if (absl::Status s = Current(); !s.ok()) return s;
  // cuDNN's, when asked for and it takes the attention.
  if (CudnnSdpa* sdpa = Sdpa()) {
    absl::Status s =
        sdpa->Run(CudaStreamOf(stream), a, workspace_.get(), kWorkspaceBytes);
    if (!absl::IsUnimplemented(s)) return s;
  }
  kc::AttentionArgs k;
  k.shape = {a.batch, a.heads, a.q_len, a.kv_len, a.head_dim};
  k.q = {ToKernel(a.q), ToKernel(a.q_strides)};
  k.k = {ToKernel(a.k), ToKernel(a.k_strides)};
  k.v = {ToKernel(a.v), ToKernel(a.v_strides)};
  k.mask = {ToKernel(a.mask), ToKernel(a.mask_strides)};
  k.out = {ToKernel(a.out), ToKernel(a.out_strides)};
  k.scale = a.scale;
  k.zero_masked_rows = a.zero_masked_rows;
  k.registers = attention_registers_;
  k.pack = a.pack;
  k.packed_rows = a.packed_rows;
  return CudaStatus(kc::LaunchAttention(k, CudaStreamOf(stream)),
                    "attention kernel");
}

// A failure to make CudnnGraphConv (no cuDNN 9, no device properties) is
// not a convolution's: the legacy path runs them, and reports cuDNN's
// absence itself. COALESCE_CUDNN_GRAPH_CONV=0 takes the legacy path for
// every convolution, and =nchw the graph for NCHW convolutions with an
// epilogue too (graph_conv_scope.h): diagnostic switches (the FP16 NCHW
// mbconv_se case failed on GPUs through the graph; scripts/gpu-session
// tests reruns it with =nchw). COALESCE_CUDNN_KERNEL_CACHE=1 shares compiled
// kernels across a convolution's batch sizes (cudnn_graph_conv.h), opt-in
// until a GPU has measured the warm-up with and without it.
CudnnGraphConv* CudaKernels::GraphConv() {
  if (graph_conv_ == nullptr && !graph_conv_failed_) {
    const char* use = std::getenv("COALESCE_CUDNN_GRAPH_CONV");
    if (use != nullptr && std::string_view(use) == "0") {
      graph_conv_failed_ = true;
      return nullptr;
    }
    const char* cache = std::getenv("COALESCE_CUDNN_KERNEL_CACHE");
    auto conv = CudnnGraphConv::Create(
        device_->ordinal(),
        {.tuning_cache = tuning_cache_,
         .kernel_cache = cache != nullptr && std::string_view(cache) == "1",
         .nchw_epilogues = use != nullptr && std::string_view(use) == "nchw"});
    graph_conv_failed_ = !conv.ok();
    if (conv.ok()) graph_conv_ = *std::move(conv);
  }
  return graph_conv_.get();
}

// COALESCE_CUDNN_SDPA=1 runs the attentions cuDNN's SDPA takes there
// (cudnn_sdpa.h), the rest with our kernel: opt-in until a GPU run has
// compared the two (docs/device-pipeline.md, "Fused attention").
CudnnSdpa* CudaKernels::Sdpa() {
  if (sdpa_ == nullptr && !sdpa_failed_) {
    const char* use = std::getenv("COALESCE_CUDNN_SDPA");
    if (use == nullptr || std::string_view(use) != "1") {
      sdpa_failed_ = true;
      return nullptr;
    }
    auto sdpa = CudnnSdpa::Create();
    sdpa_failed_ = !sdpa.ok();
    if (sdpa.ok()) {
      sdpa_ = *std::move(sdpa);
    } else {
      std::fprintf(stderr, "coalesce: cuDNN SDPA unavailable: %s\n",
                   std::string(sdpa.status().message()).c_str());
    }
  }
  return sdpa_.get();
}

absl::Status CudaKernels::Activation(DeviceStream& stream, ActivationSpec f,
                                     FloatIn x, FloatOut y, int64_t count) {
  return EnqueueChecked(
      CheckAlias(x, y, "Activation"),
      [&] {
        return kc::LaunchActivation({ToKernel(f.kind), f.alpha, f.beta},
                                    ToKernel(x), ToKernel(y), count,
                                    CudaStreamOf(stream));
      },
      "activation kernel");
}

absl::Status CudaKernels::Binary(DeviceStream& stream, const BinaryArgs& a) {
  absl::Status alias = CheckAlias(a.a, a.y, "Binary");
  if (alias.ok()) alias = CheckAlias(a.b, a.y, "Binary");
  if (!alias.ok()) return alias;
  kc::BroadcastIndexer ix;
  return EnqueueChecked(
      CheckBinary(a, &ix),
      [&](int64_t n) {
        return kc::LaunchBinary(ToKernel(a.op), ix, ToKernel(a.a),
                                ToKernel(a.b), ToKernel(a.y), n,
                                CudaStreamOf(stream));
      },
      "binary kernel");
}

absl::Status CudaKernels::Softmax(DeviceStream& stream, FloatIn x, FloatOut y,
                                  int64_t rows, int64_t cols) {
  return EnqueueChecked(
      CheckAlias(x, y, "Softmax"),
      [&] {
        return kc::LaunchSoftmax(ToKernel(x), ToKernel(y), rows, cols,
                                 CudaStreamOf(stream));
      },
      "softmax kernel");
}

absl::Status CudaKernels::LayerNorm(DeviceStream& stream,
                                    const LayerNormArgs& a) {
  absl::Status check = CheckAlias(a.x, a.y, "LayerNorm");
  if (check.ok()) check = CheckLayerNorm(a);
  return EnqueueChecked(
      check,
      [&] {
        return kc::LaunchLayerNorm({.x = ToKernel(a.x),
                                    .scale = a.scale,
                                    .bias = a.bias,
                                    .y = ToKernel(a.y),
                                    .rows = a.rows,
                                    .cols = a.cols,
                                    .epsilon = a.epsilon,
                                    .residual = ToKernel(a.residual),
                                    .residual_rows = a.residual_rows,
                                    .sum = ToKernel(a.sum)},
                                   CudaStreamOf(stream));
      },
      "layer norm kernel");
}

absl::Status CudaKernels::ToHalf(DeviceStream& stream, const float* x, Half* y,
                                 int64_t count, DeviceFloat type) {
  return Enqueue(
      [&] {
        return kc::LaunchToHalf(x, y, count, ToKernel(type),
                                CudaStreamOf(stream));
      },
      "16-bit conversion kernel");
}

absl::Status CudaKernels::FromHalf(DeviceStream& stream, const Half* x,
                                   float* y, int64_t count, DeviceFloat type) {
  return Enqueue(
      [&] {
        return kc::LaunchFromHalf(x, y, count, ToKernel(type),
                                  CudaStreamOf(stream));
      },
      "float32 conversion kernel");
}

absl::Status CudaKernels::Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                                 FloatIn x, FloatOut y) {
  const kc::PoolLayout layout = {.planes = args.planes,
                                 .channels = args.channels,
                                 .channels_last = args.channels_last};
  return EnqueueChecked(
      CheckPoolLayout(args),
      [&] {
        return kc::LaunchPool2D(ToGeometry(args), layout, ToKernel(x),
                                ToKernel(y), CudaStreamOf(stream));
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
  kc::ChannelAffineMap map;
  map.layout = {.batch = a.batch,
                .channels = a.channels,
                .spatial = a.spatial,
                .channels_last = a.channels_last};
  map.scale = a.scale;
  map.shift = a.shift;
  map.act = ToKernel(a.activation.kind);
  map.alpha = a.activation.alpha;
  map.beta = a.activation.beta;
  return EnqueueChecked(
      CheckAlias(a.x, a.y, "ChannelAffine"),
      [&] {
        return kc::LaunchChannelAffine(map, ToKernel(a.x), /*z=*/{},
                                       ToKernel(a.y), CudaStreamOf(stream));
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
