#include "engine/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/device/kernel_args.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/half.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/pad.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/quantize.h"
#include "kernels/cuda/resize.h"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/transpose.h"
#include "kernels/cuda/typed.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The epilogue cuBLASLt applies for `act` with or without a bias; `fused`
// is false when the activation must run as its own kernel afterwards.
cublasLtEpilogue_t EpilogueOf(DeviceActivation act, bool bias, bool* fused) {
  *fused = true;
  switch (act) {
    case DeviceActivation::kIdentity:
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case DeviceActivation::kRelu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case DeviceActivation::kGeluTanh:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
      *fused = false;
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

// The largest power of two up to 256 dividing every address in `ptrs`
// and every byte stride in `strides` (0 strides ignored): the alignment
// cuBLASLt may assume for every matrix of a batch. Without telling it, its
// heuristic assumes 256-byte alignment and may pick a kernel that fails on
// less (a view or a batch matrix at an odd offset).
uint32_t Alignment(std::initializer_list<const void*> ptrs,
                   std::initializer_list<int64_t> strides) {
  uint64_t bits = 256;
  for (const void* p : ptrs) bits |= reinterpret_cast<uintptr_t>(p);
  for (int64_t s : strides) bits |= static_cast<uint64_t>(s);
  return static_cast<uint32_t>(bits & (~bits + 1));  // lowest set bit
}

// Everything that decides a GEMM's descriptors and algorithm.
struct GemmKey {
  int64_t m, n, k, batch, stride_a, stride_b, stride_c;
  bool trans_a, trans_b;
  cublasLtEpilogue_t epilogue;
  uint32_t alignment;  // bytes, of every matrix (Alignment)
  bool half;           // float16 A and B (GemmArgs::a_half)
  auto Tie() const {
    return std::tie(m, n, k, batch, stride_a, stride_b, stride_c, trans_a,
                    trans_b, epilogue, alignment, half);
  }
  bool operator<(const GemmKey& o) const { return Tie() < o.Tie(); }
};

// A GEMM's cuBLASLt descriptors and chosen algorithm, destroyed with it.
class PreparedGemm {
 public:
  explicit PreparedGemm(const CublasLt& lt) : lt_(lt) {}
  ~PreparedGemm() {
    for (cublasLtMatrixLayout_t layout : {x_, y_, d_})
      if (layout != nullptr) lt_.MatrixLayoutDestroy(layout);
    if (desc_ != nullptr) lt_.MatmulDescDestroy(desc_);
  }
  PreparedGemm(const PreparedGemm&) = delete;
  PreparedGemm& operator=(const PreparedGemm&) = delete;

  absl::Status Init(cublasLtHandle_t handle, const GemmKey& key, bool tf32);
  absl::Status Run(cublasLtHandle_t handle, const GemmArgs& args,
                   void* workspace, cudaStream_t stream) const;

 private:
  absl::Status Layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                      uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                      int64_t stride);

  const CublasLt& lt_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS's
  // first operand x is B's memory, the second y is A's.
  cublasLtMatrixLayout_t x_ = nullptr, y_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

absl::Status PreparedGemm::Layout(cublasLtMatrixLayout_t* layout,
                                  cudaDataType_t type, uint64_t rows,
                                  uint64_t cols, int64_t ld, int64_t batch,
                                  int64_t stride) {
  absl::Status s =
      CublasStatus(lt_, lt_.MatrixLayoutCreate(layout, type, rows, cols, ld),
                   "cublasLtMatrixLayoutCreate");
  if (!s.ok() || batch == 1) return s;
  const int32_t count = static_cast<int32_t>(batch);
  s = CublasStatus(
      lt_,
      lt_.MatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                   &count, sizeof(count)),
      "batch count");
  if (!s.ok()) return s;
  return CublasStatus(lt_,
                      lt_.MatrixLayoutSetAttribute(
                          *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                          &stride, sizeof(stride)),
                      "batch stride");
}

absl::Status PreparedGemm::Init(cublasLtHandle_t handle, const GemmKey& key,
                                bool tf32) {
  // float16 A and B with float32 C and D, accumulating in float32, is one
  // of cuBLASLt's supported type combinations for CUBLAS_COMPUTE_32F.
  absl::Status s = CublasStatus(
      lt_,
      lt_.MatmulDescCreate(
          &desc_,
          tf32 && !key.half ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
          CUDA_R_32F),
      "cublasLtMatmulDescCreate");
  if (!s.ok()) return s;
  const cublasOperation_t op_x = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_y = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  for (const auto& [attr, value] :
       {std::pair{CUBLASLT_MATMUL_DESC_TRANSA, op_x},
        std::pair{CUBLASLT_MATMUL_DESC_TRANSB, op_y}}) {
    s = CublasStatus(
        lt_, lt_.MatmulDescSetAttribute(desc_, attr, &value, sizeof(value)),
        "cublasLtMatmulDescSetAttribute");
    if (!s.ok()) return s;
  }
  s = CublasStatus(
      lt_,
      lt_.MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 &key.epilogue, sizeof(key.epilogue)),
      "epilogue");
  if (!s.ok()) return s;
  const cudaDataType_t in = key.half ? CUDA_R_16F : CUDA_R_32F;
  // x: op(x) is n x k; stored (column-major) n x k, or k x n when transposed.
  s = key.trans_b
          ? Layout(&x_, in, key.k, key.n, key.k, key.batch, key.stride_b)
          : Layout(&x_, in, key.n, key.k, key.n, key.batch, key.stride_b);
  if (!s.ok()) return s;
  // y: op(y) is k x m.
  s = key.trans_a
          ? Layout(&y_, in, key.m, key.k, key.m, key.batch, key.stride_a)
          : Layout(&y_, in, key.k, key.m, key.k, key.batch, key.stride_a);
  if (!s.ok()) return s;
  s = Layout(&d_, CUDA_R_32F, key.n, key.m, key.n, key.batch, key.stride_c);
  if (!s.ok()) return s;

  cublasLtMatmulPreference_t pref = nullptr;
  s = CublasStatus(lt_, lt_.MatmulPreferenceCreate(&pref),
                   "cublasLtMatmulPreferenceCreate");
  if (!s.ok()) return s;
  const uint64_t workspace = kWorkspaceBytes;
  s = CublasStatus(lt_,
                   lt_.MatmulPreferenceSetAttribute(
                       pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                       &workspace, sizeof(workspace)),
                   "workspace preference");
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (!s.ok()) break;
    s = CublasStatus(lt_,
                     lt_.MatmulPreferenceSetAttribute(
                         pref, attr, &key.alignment, sizeof(key.alignment)),
                     "alignment preference");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (s.ok()) {
    s = CublasStatus(lt_,
                     lt_.MatmulAlgoGetHeuristic(handle, desc_, x_, y_, d_, d_,
                                                pref, 1, &result, &found),
                     "cublasLtMatmulAlgoGetHeuristic");
  }
  lt_.MatmulPreferenceDestroy(pref);
  if (!s.ok()) return s;
  if (found == 0) {
    return absl::InternalError(absl::StrCat(
        "cuBLASLt has no algorithm for a ", key.m, "x", key.k, " by ", key.k,
        "x", key.n, key.half ? " float16" : " float32", " GEMM (batch ",
        key.batch, ")"));
  }
  algo_ = result.algo;
  return absl::OkStatus();
}

absl::Status PreparedGemm::Run(cublasLtHandle_t handle, const GemmArgs& args,
                               void* workspace, cudaStream_t stream) const {
  if (args.bias != nullptr) {
    const void* bias = args.bias;
    absl::Status s = CublasStatus(
        lt_,
        lt_.MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &bias, sizeof(bias)),
        "bias pointer");
    if (!s.ok()) return s;
  }
  const float beta = 0.0f;
  const bool half = args.a_half != nullptr;
  const void* x = half ? static_cast<const void*>(args.b_half) : args.b;
  const void* y = half ? static_cast<const void*>(args.a_half) : args.a;
  return CublasStatus(
      lt_,
      lt_.Matmul(handle, desc_, &args.alpha, x, x_, y, y_, &beta, args.c, d_,
                 args.c, d_, &algo_, workspace, kWorkspaceBytes, stream),
      "cublasLtMatmul");
}

// Everything that decides a convolution's descriptors and algorithm.
struct ConvKey {
  int64_t n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w, stride_h,
      stride_w, pad_top, pad_left, dilation_h, dilation_w, groups;
  bool half;  // float16 x, w and y (ConvArgs::x_half)
  // cudnnConvolutionBiasActivationForward's activation, or -1 where the
  // convolution runs alone (see FusedActivationOf).
  int fused;
  auto Tie() const {
    return std::tie(n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w,
                    stride_h, stride_w, pad_top, pad_left, dilation_h,
                    dilation_w, groups, half, fused);
  }
  bool operator<(const ConvKey& o) const { return Tie() < o.Tie(); }
  static ConvKey Of(const ConvArgs& a) {
    return {a.n,
            a.c,
            a.in_h,
            a.in_w,
            a.m,
            a.kernel_h,
            a.kernel_w,
            a.out_h,
            a.out_w,
            a.stride_h,
            a.stride_w,
            a.pad_top,
            a.pad_left,
            a.dilation_h,
            a.dilation_w,
            a.groups,
            a.x_half != nullptr,
            FusedActivationOf(a)};
  }

  // cuDNN's fused call adds a residual z and a bias, then applies Relu or
  // nothing, in float32 (float16 tensors would need a float16 z and bias):
  // the residual convolutions of ResNet. The rest runs as the convolution,
  // then Binary and ChannelAffine.
  static int FusedActivationOf(const ConvArgs& a) {
    if (a.z == nullptr || a.bias == nullptr || a.x_half != nullptr) return -1;
    switch (a.activation.kind) {
      case DeviceActivation::kIdentity:
        return CUDNN_ACTIVATION_IDENTITY;
      case DeviceActivation::kRelu:
        return CUDNN_ACTIVATION_RELU;
      default:
        return -1;
    }
  }
};

// A convolution's cuDNN descriptors and chosen algorithm (FP32 with FMA
// math: no TF32, unless allowed; or float16 tensors with float32
// accumulation on tensor cores: cuDNN's PSEUDO_HALF_CONFIG), destroyed
// with it.
class PreparedConv {
 public:
  explicit PreparedConv(const Cudnn& dnn) : dnn_(dnn) {}
  ~PreparedConv() {
    for (cudnnTensorDescriptor_t t : {x_, y_, bias_})
      if (t != nullptr) dnn_.DestroyTensorDescriptor(t);
    if (w_ != nullptr) dnn_.DestroyFilterDescriptor(w_);
    if (conv_ != nullptr) dnn_.DestroyConvolutionDescriptor(conv_);
    if (act_ != nullptr) dnn_.DestroyActivationDescriptor(act_);
  }

  bool fused() const { return act_ != nullptr; }
  PreparedConv(const PreparedConv&) = delete;
  PreparedConv& operator=(const PreparedConv&) = delete;

  absl::Status Init(cudnnHandle_t handle, const ConvKey& k, size_t workspace,
                    bool tf32) {
    auto check = [&](cudnnStatus_t status, const char* call) {
      return CudnnStatus(dnn_, status, call);
    };
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnDataType_t type = k.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    cudnnMathType_t math = tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if (k.half) math = CUDNN_TENSOR_OP_MATH;
    absl::Status s =
        check(dnn_.CreateTensorDescriptor(&x_), "tensor descriptor");
    if (s.ok())
      s = check(dnn_.SetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, i(k.n),
                                           i(k.c), i(k.in_h), i(k.in_w)),
                "input");
    if (s.ok())
      s = check(dnn_.CreateTensorDescriptor(&y_), "tensor descriptor");
    if (s.ok())
      s = check(dnn_.SetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, i(k.n),
                                           i(k.m), i(k.out_h), i(k.out_w)),
                "output");
    if (s.ok())
      s = check(dnn_.CreateFilterDescriptor(&w_), "filter descriptor");
    if (s.ok())
      s = check(dnn_.SetFilter4dDescriptor(w_, type, CUDNN_TENSOR_NCHW, i(k.m),
                                           i(k.c / k.groups), i(k.kernel_h),
                                           i(k.kernel_w)),
                "filter");
    if (s.ok())
      s = check(dnn_.CreateConvolutionDescriptor(&conv_),
                "convolution descriptor");
    if (s.ok())
      s = check(dnn_.SetConvolution2dDescriptor(
                    conv_, i(k.pad_top), i(k.pad_left), i(k.stride_h),
                    i(k.stride_w), i(k.dilation_h), i(k.dilation_w),
                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "convolution");
    if (s.ok())
      s = check(dnn_.SetConvolutionGroupCount(conv_, i(k.groups)), "groups");
    if (s.ok())
      s = check(dnn_.SetConvolutionMathType(conv_, math), "math type");
    if (s.ok() && k.fused >= 0) s = InitFused(k);
    if (!s.ok()) return s;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    s = check(dnn_.GetConvolutionForwardAlgorithm(
                  handle, x_, w_, conv_, y_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                  &found, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7");
    if (!s.ok()) return s;
    for (int a = 0; a < found; ++a) {  // best first; the first that fits
      // The fused call runs without an activation only with this algorithm.
      const bool allowed =
          k.fused != CUDNN_ACTIVATION_IDENTITY ||
          perf[a].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      // Exact FP32 takes FMA algorithms only (no TF32 tensor cores); float32
      // data never takes one that converts it to float16.
      const bool math_ok =
          (math != CUDNN_FMA_MATH || perf[a].mathType == CUDNN_FMA_MATH) &&
          !(type == CUDNN_DATA_FLOAT &&
            perf[a].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
      if (!allowed || !math_ok || perf[a].status != CUDNN_STATUS_SUCCESS ||
          perf[a].memory > workspace)
        continue;
      // The heuristics' memory is an estimate: cuDNN answers
      // CUDNN_STATUS_BAD_PARAM at run time when the workspace is smaller
      // than the algorithm needs for these shapes, so ask for the real size
      // with the math type the algorithm was rated with.
      if (perf[a].mathType != math &&
          dnn_.SetConvolutionMathType(conv_, perf[a].mathType) !=
              CUDNN_STATUS_SUCCESS)
        continue;
      size_t needed = 0;
      if (dnn_.GetConvolutionForwardWorkspaceSize(handle, x_, w_, conv_, y_,
                                                  perf[a].algo, &needed) ==
              CUDNN_STATUS_SUCCESS &&
          needed <= workspace) {
        algo_ = perf[a].algo;
        workspace_bytes_ = needed;
        return absl::OkStatus();
      }
      if (perf[a].mathType != math) dnn_.SetConvolutionMathType(conv_, math);
    }
    return absl::InternalError(
        absl::StrCat("cuDNN has no ", k.half ? "float16" : "float32",
                     " algorithm for this convolution within the workspace"));
  }

  absl::Status Run(cudnnHandle_t handle, const ConvArgs& a, void* workspace,
                   size_t workspace_bytes) const {
    const float one = 1.0f, zero = 0.0f;
    if (fused()) {  // y = act(conv + z + bias); z is y's shape, never y
      return Checked(
          dnn_.ConvolutionBiasActivationForward(
              handle, &one, x_, a.x, w_, a.w, conv_, algo_, workspace,
              workspace_bytes, &one, y_, a.z, bias_, a.bias, act_, y_, a.y),
          "cudnnConvolutionBiasActivationForward");
    }
    const bool half = a.x_half != nullptr;
    const void* x = half ? static_cast<const void*>(a.x_half) : a.x;
    const void* w = half ? static_cast<const void*>(a.w_half) : a.w;
    void* y = half ? static_cast<void*>(a.y_half) : a.y;
    return Checked(
        dnn_.ConvolutionForward(handle, &one, x_, x, w_, w, conv_, algo_,
                                workspace, workspace_bytes, &zero, y_, y),
        "cudnnConvolutionForward");
  }

  // OK, or the error of `call` naming the algorithm and the workspace it
  // needs (formatted on failure only: a run allocates nothing).
  absl::Status Checked(cudnnStatus_t status, const char* call) const {
    if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
    return CudnnStatus(
        dnn_, status,
        absl::StrCat(call, " (algorithm ", static_cast<int>(algo_), ", ",
                     workspace_bytes_, "-byte workspace)"));
  }

 private:
  // The bias [1, m, 1, 1] and activation descriptors of the fused call.
  absl::Status InitFused(const ConvKey& k) {
    auto check = [&](cudnnStatus_t status, const char* call) {
      return CudnnStatus(dnn_, status, call);
    };
    absl::Status s =
        check(dnn_.CreateTensorDescriptor(&bias_), "tensor descriptor");
    if (s.ok())
      s = check(
          dnn_.SetTensor4dDescriptor(bias_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                     1, static_cast<int>(k.m), 1, 1),
          "bias");
    if (s.ok())
      s = check(dnn_.CreateActivationDescriptor(&act_),
                "activation descriptor");
    if (s.ok())
      s = check(dnn_.SetActivationDescriptor(
                    act_, static_cast<cudnnActivationMode_t>(k.fused),
                    CUDNN_PROPAGATE_NAN, 0.0),
                "activation");
    return s;
  }

  const Cudnn& dnn_;
  cudnnTensorDescriptor_t bias_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes_ = 0;  // what algo_ needs for these shapes
};

class CudaKernels : public DeviceKernels {
 public:
  CudaKernels(std::shared_ptr<CudaDevice> device, const CublasLt& lt,
              const DeviceKernelOptions& options)
      : device_(std::move(device)),
        lt_(lt),
        tf32_(options.precision == DevicePrecision::kTf32) {}
  ~CudaKernels() override {
    cudaSetDevice(device_->ordinal());
    gemms_.clear();
    convs_.clear();
    if (dnn_handle_ != nullptr) dnn_->Destroy(dnn_handle_);
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (handle_ != nullptr) lt_.Destroy(handle_);
  }

  absl::Status Init() {
    if (absl::Status s = Current(); !s.ok()) return s;
    absl::Status s = CublasStatus(lt_, lt_.Create(&handle_), "cublasLtCreate");
    if (!s.ok()) return s;
    return CudaStatus(cudaMalloc(&workspace_, kWorkspaceBytes),
                      "cudaMalloc (cuBLASLt workspace)");
  }

  std::string description() const override {
    return absl::StrCat("cuBLASLt ", lt_.version, " (", lt_.path, "), ",
                        tf32_ ? "TF32 allowed" : "exact FP32");
  }

  absl::Status Gemm(DeviceStream& stream, const GemmArgs& args) override {
    if (args.m == 0 || args.n == 0 || args.batch == 0) return absl::OkStatus();
    if (absl::Status s = Current(); !s.ok()) return s;
    bool fused = false;
    const bool half = args.a_half != nullptr;
    const int64_t f = sizeof(float);
    const int64_t h = half ? sizeof(Half) : sizeof(float);  // of A and B
    const void* a = half ? static_cast<const void*>(args.a_half) : args.a;
    const void* b = half ? static_cast<const void*>(args.b_half) : args.b;
    const GemmKey key{
        args.m,
        args.n,
        args.k,
        args.batch,
        args.stride_a,
        args.stride_b,
        args.stride_c,
        args.trans_a,
        args.trans_b,
        EpilogueOf(args.activation.kind, args.bias != nullptr, &fused),
        Alignment({a, b, args.c},
                  {args.stride_a * h, args.stride_b * h, args.stride_c * f}),
        half};
    auto it = gemms_.find(key);
    if (it == gemms_.end()) {
      auto prepared = std::make_unique<PreparedGemm>(lt_);
      if (absl::Status s = prepared->Init(handle_, key, tf32_); !s.ok())
        return s;
      it = gemms_.emplace(key, std::move(prepared)).first;
    }
    cudaStream_t s = CudaStreamOf(stream);
    absl::Status status = it->second->Run(handle_, args, workspace_, s);
    if (!status.ok() || fused) return status;
    const int64_t count = ((args.batch - 1) * args.stride_c + args.m * args.n);
    return Activation(stream, args.activation, args.c, args.c, count);
  }

  absl::Status Activation(DeviceStream& stream, ActivationSpec f,
                          const float* x, float* y, int64_t count) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchActivation(ToKernel(f.kind), f.alpha, f.beta, x,
                                           y, count, CudaStreamOf(stream)),
                      "activation kernel");
  }

  absl::Status Binary(DeviceStream& stream, DeviceBinaryOp op, const float* a,
                      const Shape& a_shape, const float* b,
                      const Shape& b_shape, float* y) override {
    kc::BroadcastIndexer ix;
    const int64_t n = BroadcastIndexerFor(a_shape, b_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("shapes do not broadcast");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchBinary(ToKernel(op), ix, a, b, y, n, CudaStreamOf(stream)),
        "binary kernel");
  }

  absl::Status Softmax(DeviceStream& stream, const float* x, float* y,
                       int64_t rows, int64_t cols) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchSoftmax(x, y, rows, cols, CudaStreamOf(stream)),
                      "softmax kernel");
  }

  absl::Status Transpose(DeviceStream& stream, const void* x,
                         const Shape& x_shape, const std::vector<int64_t>& perm,
                         size_t element_bytes, void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = TransposeIndexerFor(x_shape, perm, &ix);
    if (n < 0) return absl::InvalidArgumentError("bad transpose permutation");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchTranspose(ix, x, y, n, element_bytes, CudaStreamOf(stream)),
        "transpose kernel");
  }

  absl::Status Broadcast(DeviceStream& stream, const void* x,
                         const Shape& x_shape, const Shape& y_shape,
                         size_t element_bytes, void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = ExpandIndexerFor(x_shape, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("shapes do not broadcast");
    if (n == 0) return absl::OkStatus();
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchTranspose(ix, x, y, n, element_bytes, CudaStreamOf(stream)),
        "broadcast kernel");
  }

  absl::Status LayerNorm(DeviceStream& stream, const float* x,
                         const float* scale, const float* bias, float* y,
                         int64_t rows, int64_t cols, float epsilon) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchLayerNorm(x, scale, bias, y, rows, cols,
                                          epsilon, CudaStreamOf(stream)),
                      "layer norm kernel");
  }

  absl::Status Gather(DeviceStream& stream, const void* data,
                      size_t element_bytes, int64_t outer, int64_t axis_dim,
                      int64_t inner, const void* indices, bool indices_int64,
                      int64_t num_indices, void* y) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchGather(data, element_bytes, outer, axis_dim, inner, indices,
                         indices_int64, num_indices, y, CudaStreamOf(stream)),
        "gather kernel");
  }

  absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                      int64_t count) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchToHalf(x, y, count, CudaStreamOf(stream)),
                      "float16 conversion kernel");
  }

  absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                        int64_t count) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchFromHalf(x, y, count, CudaStreamOf(stream)),
                      "float32 conversion kernel");
  }

  absl::Status Typed(DeviceStream& stream, DeviceTypedOp op, DataType type,
                     const void* a, const Shape& a_shape, const void* b,
                     const Shape& b_shape, void* y,
                     const Shape& y_shape) override {
    kc::ElementType element;
    if (!ElementTypeOf(type, &element)) {
      return absl::InvalidArgumentError("typed kernels do not take this type");
    }
    const kc::TypedOp kop = ToKernel(op);
    kc::TypedIndexer ix;
    const int64_t n = kc::IsUnaryTyped(kop)
                          ? TypedIndexerFor({&a_shape}, y_shape, &ix)
                          : TypedIndexerFor({&a_shape, &b_shape}, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("shapes do not broadcast");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchTyped(kop, element, ix, a, b, y, n, CudaStreamOf(stream)),
        "typed elementwise kernel");
  }

  absl::Status Where(DeviceStream& stream, const void* cond,
                     const Shape& cond_shape, const void* x,
                     const Shape& x_shape, const void* z, const Shape& z_shape,
                     size_t element_bytes, void* y,
                     const Shape& y_shape) override {
    kc::TypedIndexer ix;
    const int64_t n =
        TypedIndexerFor({&cond_shape, &x_shape, &z_shape}, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("shapes do not broadcast");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchWhere(ix, static_cast<const uint8_t*>(cond), x, z,
                        element_bytes, y, n, CudaStreamOf(stream)),
        "where kernel");
  }

  absl::Status Cast(DeviceStream& stream, DataType from, const void* x,
                    DataType to, void* y, int64_t count) override {
    kc::ElementType source, target;
    if (!ElementTypeOf(from, &source) || !ElementTypeOf(to, &target)) {
      return absl::InvalidArgumentError("cast kernel does not take this type");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchCast(source, x, target, y, count, CudaStreamOf(stream)),
        "cast kernel");
  }

  absl::Status StridedCopy(DeviceStream& stream, const void* x, int64_t x_count,
                           int64_t offset, const std::vector<int64_t>& strides,
                           const Shape& y_shape, size_t element_bytes,
                           void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = StridedIndexerFor(strides, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("strided copy above rank 8");
    if (!StridedViewInBounds(x_count, offset, strides, y_shape)) {
      return absl::InvalidArgumentError(
          "strided copy reads outside its source");
    }
    if (n == 0) return absl::OkStatus();
    if (absl::Status s = Current(); !s.ok()) return s;
    const char* base = static_cast<const char*>(x) + offset * element_bytes;
    return CudaStatus(kc::LaunchTranspose(ix, base, y, n, element_bytes,
                                          CudaStreamOf(stream)),
                      "strided copy kernel");
  }

  absl::Status Pad(DeviceStream& stream, const PadArgs& a) override {
    kc::PadIndexer ix;
    const int64_t n = PadIndexerFor(a, &ix);
    if (n < 0) return absl::InvalidArgumentError("Pad shapes");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchPad(ix, a.x, a.fill, a.element_bytes, a.y, n,
                                    CudaStreamOf(stream)),
                      "pad kernel");
  }

  absl::Status Quantize(DeviceStream& stream, const QuantizeArgs& a) override {
    kc::QuantType type;
    if (!QuantTypeOf(a.quantized, &type) ||
        (a.quantize && a.quantized == DataType::kInt32)) {
      return absl::InvalidArgumentError("quantized type");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchQuantize(a.quantize, type, a.x, a.scale, a.zero_point, a.y,
                           a.outer, a.channels, a.inner, CudaStreamOf(stream)),
        "quantize kernel");
  }

  absl::Status Resize(DeviceStream& stream, const ResizeArgs& a) override {
    kc::ResizeIndexer ix;
    const int64_t n = ResizeIndexerFor(a, &ix);
    if (n < 0) return absl::InvalidArgumentError("a Resize the kernel lacks");
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchResize(ix, a.x, a.y, n, CudaStreamOf(stream)),
                      "resize kernel");
  }

  absl::Status GatherNd(DeviceStream& stream, const GatherNdArgs& a) override {
    kc::GatherNdIndexer ix;
    if (!GatherNdIndexerFor(a, &ix)) {
      return absl::InvalidArgumentError("GatherND index tuples above 8");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    const int64_t n = a.batches * a.rows_per_batch * a.slice;
    return CudaStatus(kc::LaunchGatherNd(ix, a.data, a.element_bytes, a.indices,
                                         a.y, n, CudaStreamOf(stream)),
                      "GatherND kernel");
  }

  absl::Status GatherElements(DeviceStream& stream,
                              const GatherElementsArgs& a) override {
    kc::GatherElementsIndexer ix;
    if (!GatherElementsIndexerFor(a, &ix)) {
      return absl::InvalidArgumentError("GatherElements shapes or axis");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    int64_t n = 1;
    for (int64_t d : a.indices_shape) n *= d;
    return CudaStatus(
        kc::LaunchGatherElements(ix, a.data, a.element_bytes, a.indices,
                                 a.indices_int64, a.y, n, CudaStreamOf(stream)),
        "GatherElements kernel");
  }

  absl::Status CumSum(DeviceStream& stream, DataType type, const void* x,
                      void* y, int64_t outer, int64_t n, int64_t inner,
                      bool exclusive, bool reverse) override {
    kc::ElementType element;
    if (!ElementTypeOf(type, &element)) {
      return absl::InvalidArgumentError("CumSum of this type");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchCumSum(element, x, y, outer, n, inner, exclusive, reverse,
                         CudaStreamOf(stream)),
        "CumSum kernel");
  }

  absl::Status ArgMax(DeviceStream& stream, DataType type, const void* x,
                      int64_t* y, int64_t outer, int64_t n, int64_t inner,
                      bool select_last) override {
    kc::ElementType element;
    if (!ElementTypeOf(type, &element)) {
      return absl::InvalidArgumentError("ArgMax of this type");
    }
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchArgMax(element, x, y, outer, n, inner,
                                       select_last, CudaStreamOf(stream)),
                      "ArgMax kernel");
  }

  absl::Status Conv2D(DeviceStream& stream, const ConvArgs& args) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    if (dnn_handle_ == nullptr) {  // cuDNN is loaded by the first convolution
      auto dnn = LoadCudnn();
      if (!dnn.ok()) return dnn.status();
      dnn_ = *dnn;
      absl::Status s =
          CudnnStatus(*dnn_, dnn_->Create(&dnn_handle_), "cudnnCreate");
      if (!s.ok()) return s;
    }
    absl::Status s =
        CudnnStatus(*dnn_, dnn_->SetStream(dnn_handle_, CudaStreamOf(stream)),
                    "cudnnSetStream");
    if (!s.ok()) return s;
    const ConvKey key = ConvKey::Of(args);
    auto it = convs_.find(key);
    if (it == convs_.end()) {
      auto prepared = std::make_unique<PreparedConv>(*dnn_);
      if (s = prepared->Init(dnn_handle_, key, kWorkspaceBytes, tf32_); !s.ok())
        return s;
      it = convs_.emplace(key, std::move(prepared)).first;
    }
    if (s = it->second->Run(dnn_handle_, args, workspace_, kWorkspaceBytes);
        !s.ok())
      return s;
    if (it->second->fused()) return absl::OkStatus();
    const int64_t count = args.n * args.m * args.out_h * args.out_w;
    if (args.y_half != nullptr) {
      if (s = FromHalf(stream, args.y_half, args.y, count); !s.ok()) return s;
    }
    if (args.z != nullptr) {
      const Shape shape = {count};
      if (s = Binary(stream, DeviceBinaryOp::kAdd, args.y, shape, args.z, shape,
                     args.y);
          !s.ok())
        return s;
    }
    if (args.bias == nullptr &&
        args.activation.kind == DeviceActivation::kIdentity) {
      return absl::OkStatus();
    }
    return ChannelAffine(stream, args.y, nullptr, args.bias, args.y, args.n,
                         args.m, args.out_h * args.out_w, args.activation);
  }

  absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                      const float* x, float* y) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchPool2D(ToGeometry(args), x, y, args.planes,
                                       CudaStreamOf(stream)),
                      "pooling kernel");
  }

  absl::Status Lrn(DeviceStream& stream, const float* x, float* y,
                   int64_t batch, int64_t channels, int64_t spatial,
                   int64_t size, float alpha, float beta, float bias) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(kc::LaunchLrn(x, y, batch, channels, spatial, size, alpha,
                                    beta, bias, CudaStreamOf(stream)),
                      "LRN kernel");
  }

  absl::Status ChannelAffine(DeviceStream& stream, const float* x,
                             const float* scale, const float* shift, float* y,
                             int64_t batch, int64_t channels, int64_t spatial,
                             ActivationSpec act) override {
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        kc::LaunchChannelAffine(x, scale, shift, y, batch, channels, spatial,
                                ToKernel(act.kind), act.alpha, act.beta,
                                CudaStreamOf(stream)),
        "per-channel kernel");
  }

  absl::Status Copy2D(DeviceStream& stream, void* dst, size_t dst_pitch,
                      const void* src, size_t src_pitch, size_t row_bytes,
                      size_t rows) override {
    if (rows == 0 || row_bytes == 0) return absl::OkStatus();
    if (absl::Status s = Current(); !s.ok()) return s;
    return CudaStatus(
        cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows,
                          cudaMemcpyDeviceToDevice, CudaStreamOf(stream)),
        "cudaMemcpy2DAsync");
  }

 private:
  absl::Status Current() const {
    return CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
  }

  const std::shared_ptr<CudaDevice> device_;
  const CublasLt& lt_;
  const bool tf32_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<GemmKey, std::unique_ptr<PreparedGemm>> gemms_;
  const Cudnn* dnn_ = nullptr;  // loaded by the first convolution
  cudnnHandle_t dnn_handle_ = nullptr;
  std::map<ConvKey, std::unique_ptr<PreparedConv>> convs_;
};

}  // namespace

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
