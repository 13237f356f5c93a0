#include "engine/cuda/cuda_conv.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

// cuDNN's fused call adds a residual z and a bias, then applies Relu or
// nothing, in float32 (float16 tensors would need a float16 z and bias):
// the residual convolutions of ResNet. The rest runs as the convolution,
// then the caller's Binary and ChannelAffine.
int FusedActivationOf(const ConvArgs& a) {
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

ConvKey KeyOf(const ConvArgs& a) {
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

int I(int64_t v) { return static_cast<int>(v); }

}  // namespace

// A convolution's cuDNN descriptors and chosen algorithm (FP32 with FMA
// math: no TF32, unless allowed; or float16 tensors with float32
// accumulation on tensor cores: cuDNN's PSEUDO_HALF_CONFIG), destroyed
// with it.
class PreparedConv {
 public:
  explicit PreparedConv(const Cudnn& dnn)
      : dnn_(dnn),
        x_(dnn),
        y_(dnn),
        bias_(dnn),
        w_(dnn),
        conv_(dnn),
        act_(dnn) {}

  bool fused() const { return act_.get() != nullptr; }

  absl::Status Init(cudnnHandle_t handle, const ConvKey& k, size_t workspace,
                    bool tf32);
  absl::Status Run(cudnnHandle_t handle, const ConvArgs& a, void* workspace,
                   size_t workspace_bytes) const;

 private:
  absl::Status InitTensors(const ConvKey& k, cudnnDataType_t type);
  absl::Status InitConvolution(const ConvKey& k, cudnnMathType_t math);
  absl::Status InitFused(const ConvKey& k);
  absl::Status ChooseAlgo(cudnnHandle_t handle, const ConvKey& k,
                          size_t workspace, cudnnDataType_t type,
                          cudnnMathType_t math);
  bool FitsWorkspace(cudnnHandle_t handle,
                     const cudnnConvolutionFwdAlgoPerf_t& perf,
                     size_t workspace, cudnnMathType_t math);

  absl::Status Check(cudnnStatus_t status, const char* call) const {
    return CudnnStatus(dnn_, status, call);
  }
  // OK, or the error of `call` naming the algorithm and the workspace it
  // needs (formatted on failure only: a run allocates nothing).
  absl::Status Checked(cudnnStatus_t status, const char* call) const;

  const Cudnn& dnn_;
  DnnTensorDesc x_, y_;
  DnnTensorDesc bias_;  // the fused call's [1, m, 1, 1] bias
  DnnFilterDesc w_;
  DnnConvolutionDesc conv_;
  DnnActivationDesc act_;  // the fused call's; null when not fused
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes_ = 0;  // what algo_ needs for these shapes
};

absl::Status PreparedConv::Init(cudnnHandle_t handle, const ConvKey& k,
                                size_t workspace, bool tf32) {
  const cudnnDataType_t type = k.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  cudnnMathType_t math = tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  if (k.half) math = CUDNN_TENSOR_OP_MATH;
  if (absl::Status s = InitTensors(k, type); !s.ok()) return s;
  if (absl::Status s = InitConvolution(k, math); !s.ok()) return s;
  if (k.fused >= 0) {
    if (absl::Status s = InitFused(k); !s.ok()) return s;
  }
  return ChooseAlgo(handle, k, workspace, type, math);
}

absl::Status PreparedConv::InitTensors(const ConvKey& k, cudnnDataType_t type) {
  absl::Status s =
      Check(dnn_.CreateTensorDescriptor(x_.receive()), "tensor descriptor");
  if (s.ok())
    s = Check(dnn_.SetTensor4dDescriptor(x_.get(), CUDNN_TENSOR_NCHW, type,
                                         I(k.n), I(k.c), I(k.in_h), I(k.in_w)),
              "input");
  if (s.ok())
    s = Check(dnn_.CreateTensorDescriptor(y_.receive()), "tensor descriptor");
  if (s.ok())
    s = Check(
        dnn_.SetTensor4dDescriptor(y_.get(), CUDNN_TENSOR_NCHW, type, I(k.n),
                                   I(k.m), I(k.out_h), I(k.out_w)),
        "output");
  if (s.ok())
    s = Check(dnn_.CreateFilterDescriptor(w_.receive()), "filter descriptor");
  if (s.ok())
    s = Check(dnn_.SetFilter4dDescriptor(w_.get(), type, CUDNN_TENSOR_NCHW,
                                         I(k.m), I(k.c / k.groups),
                                         I(k.kernel_h), I(k.kernel_w)),
              "filter");
  return s;
}

absl::Status PreparedConv::InitConvolution(const ConvKey& k,
                                           cudnnMathType_t math) {
  absl::Status s = Check(dnn_.CreateConvolutionDescriptor(conv_.receive()),
                         "convolution descriptor");
  if (s.ok())
    s = Check(dnn_.SetConvolution2dDescriptor(
                  conv_.get(), I(k.pad_top), I(k.pad_left), I(k.stride_h),
                  I(k.stride_w), I(k.dilation_h), I(k.dilation_w),
                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "convolution");
  if (s.ok())
    s = Check(dnn_.SetConvolutionGroupCount(conv_.get(), I(k.groups)),
              "groups");
  if (s.ok())
    s = Check(dnn_.SetConvolutionMathType(conv_.get(), math), "math type");
  return s;
}

// The bias [1, m, 1, 1] and activation descriptors of the fused call.
absl::Status PreparedConv::InitFused(const ConvKey& k) {
  absl::Status s =
      Check(dnn_.CreateTensorDescriptor(bias_.receive()), "tensor descriptor");
  if (s.ok())
    s = Check(dnn_.SetTensor4dDescriptor(bias_.get(), CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, 1, I(k.m), 1, 1),
              "bias");
  if (s.ok())
    s = Check(dnn_.CreateActivationDescriptor(act_.receive()),
              "activation descriptor");
  if (s.ok())
    s = Check(dnn_.SetActivationDescriptor(
                  act_.get(), static_cast<cudnnActivationMode_t>(k.fused),
                  CUDNN_PROPAGATE_NAN, 0.0),
              "activation");
  return s;
}

absl::Status PreparedConv::ChooseAlgo(cudnnHandle_t handle, const ConvKey& k,
                                      size_t workspace, cudnnDataType_t type,
                                      cudnnMathType_t math) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  absl::Status s = Check(dnn_.GetConvolutionForwardAlgorithm(
                             handle, x_.get(), w_.get(), conv_.get(), y_.get(),
                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
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
    if (FitsWorkspace(handle, perf[a], workspace, math)) {
      algo_ = perf[a].algo;
      return absl::OkStatus();
    }
  }
  return absl::InternalError(
      absl::StrCat("cuDNN has no ", k.half ? "float16" : "float32",
                   " algorithm for this convolution within the workspace"));
}

// The heuristics' memory is an estimate: cuDNN answers
// CUDNN_STATUS_BAD_PARAM at run time when the workspace is smaller than the
// algorithm needs for these shapes, so this asks for the real size with the
// math type the algorithm was rated with (and keeps that math type when it
// fits; sets workspace_bytes_ then).
bool PreparedConv::FitsWorkspace(cudnnHandle_t handle,
                                 const cudnnConvolutionFwdAlgoPerf_t& perf,
                                 size_t workspace, cudnnMathType_t math) {
  if (perf.mathType != math &&
      dnn_.SetConvolutionMathType(conv_.get(), perf.mathType) !=
          CUDNN_STATUS_SUCCESS)
    return false;
  size_t needed = 0;
  if (dnn_.GetConvolutionForwardWorkspaceSize(
          handle, x_.get(), w_.get(), conv_.get(), y_.get(), perf.algo,
          &needed) == CUDNN_STATUS_SUCCESS &&
      needed <= workspace) {
    workspace_bytes_ = needed;
    return true;
  }
  if (perf.mathType != math) dnn_.SetConvolutionMathType(conv_.get(), math);
  return false;
}

absl::Status PreparedConv::Run(cudnnHandle_t handle, const ConvArgs& a,
                               void* workspace, size_t workspace_bytes) const {
  const float one = 1.0f, zero = 0.0f;
  if (fused()) {  // y = act(conv + z + bias); z is y's shape, never y
    return Checked(dnn_.ConvolutionBiasActivationForward(
                       handle, &one, x_.get(), a.x, w_.get(), a.w, conv_.get(),
                       algo_, workspace, workspace_bytes, &one, y_.get(), a.z,
                       bias_.get(), a.bias, act_.get(), y_.get(), a.y),
                   "cudnnConvolutionBiasActivationForward");
  }
  const bool half = a.x_half != nullptr;
  const void* x = half ? static_cast<const void*>(a.x_half) : a.x;
  const void* w = half ? static_cast<const void*>(a.w_half) : a.w;
  void* y = half ? static_cast<void*>(a.y_half) : a.y;
  return Checked(dnn_.ConvolutionForward(handle, &one, x_.get(), x, w_.get(), w,
                                         conv_.get(), algo_, workspace,
                                         workspace_bytes, &zero, y_.get(), y),
                 "cudnnConvolutionForward");
}

absl::Status PreparedConv::Checked(cudnnStatus_t status,
                                   const char* call) const {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return CudnnStatus(dnn_, status,
                     absl::StrCat(call, " (algorithm ", static_cast<int>(algo_),
                                  ", ", workspace_bytes_, "-byte workspace)"));
}

CudaConv::CudaConv(const Cudnn& dnn, bool tf32, size_t workspace_bytes)
    : dnn_(dnn), tf32_(tf32), workspace_bytes_(workspace_bytes), handle_(dnn) {}

CudaConv::~CudaConv() = default;

absl::StatusOr<std::unique_ptr<CudaConv>> CudaConv::Create(
    bool tf32, size_t workspace_bytes) {
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) return dnn.status();
  std::unique_ptr<CudaConv> conv(new CudaConv(**dnn, tf32, workspace_bytes));
  absl::Status s = CudnnStatus(**dnn, (*dnn)->Create(conv->handle_.receive()),
                               "cudnnCreate");
  if (!s.ok()) return s;
  return conv;
}

absl::Status CudaConv::Run(const ConvArgs& args, void* workspace,
                           cudaStream_t stream, bool* fused) {
  absl::Status s = CudnnStatus(dnn_, dnn_.SetStream(handle_.get(), stream),
                               "cudnnSetStream");
  if (!s.ok()) return s;
  const ConvKey key = KeyOf(args);
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    auto prepared = std::make_unique<PreparedConv>(dnn_);
    s = prepared->Init(handle_.get(), key, workspace_bytes_, tf32_);
    if (!s.ok()) return s;
    it = prepared_.emplace(key, std::move(prepared)).first;
  }
  *fused = it->second->fused();
  return it->second->Run(handle_.get(), args, workspace, workspace_bytes_);
}

}  // namespace coalesce
