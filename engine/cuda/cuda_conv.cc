#include "engine/cuda/cuda_conv.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/cudnn_backend.h"
#include "engine/device/kernel_args.h"
#include "kernels/cuda/pool.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;

// cuDNN's fused call adds a residual z and a bias, then applies Relu or
// nothing, in float32 (float16 tensors would need a float16 z and bias):
// the residual convolutions of ResNet, NCHW (the layout it has been
// written for). The rest runs as the convolution, then the epilogue kernel.
int FusedActivationOf(const ConvArgs& a) {
  if (a.z.data == nullptr || a.z.is_16bit() || a.bias == nullptr ||
      a.x.is_16bit() || a.y.is_16bit() || a.channels_last)
    return -1;
  switch (a.activation.kind) {
    case DeviceActivation::kIdentity:
      return CUDNN_ACTIVATION_IDENTITY;
    case DeviceActivation::kRelu:
      return CUDNN_ACTIVATION_RELU;
    default:
      return -1;
  }
}

ConvKey KeyOf(const ConvArgs& a, bool tf32) {
  return {.shape = ConvShapeKey::Of(a),
          .type = a.x.type,
          .channels_last = a.channels_last,
          .fused = FusedActivationOf(a),
          .tf32 = tf32};
}

const char* FusedName(int fused) {
  switch (fused) {
    case CUDNN_ACTIVATION_IDENTITY:
      return "identity";
    case CUDNN_ACTIVATION_RELU:
      return "relu";
    default:
      return "none";
  }
}

// The tuning key after the device identity: every field of the ConvKey,
// readable.
std::string TuningKeyOf(const ConvKey& k) {
  return absl::StrCat("cudnn-conv/1 x=", TuningTypeName(k.type), " ",
                      k.shape.ToString(), k.channels_last ? " nhwc" : " nchw",
                      " fused=", FusedName(k.fused), " tf32=", k.tf32 ? 1 : 0);
}

int I(int64_t v) { return static_cast<int>(v); }

const char* LayoutName(bool channels_last) {
  return channels_last ? "NHWC" : "NCHW";
}

// Where cuDNN writes the bare convolution: y when it has x's storage, else
// (a 16-bit convolution, a float32 y) y_scratch, of x's type.
kc::FloatTarget ConvResultOf(const ConvArgs& a) {
  if (a.x.is_16bit() && !a.y.is_16bit())
    return {a.y_scratch, ToKernel(a.x.type)};
  return ToKernel(a.y);
}

// The epilogue kernel, y = act(result + bias[channel] + z), unless the
// result is already y and there is nothing to apply.
absl::Status RunEpilogue(const ConvArgs& a, cudaStream_t stream) {
  const kc::FloatTarget result = ConvResultOf(a);
  if (result.data == a.y.data && a.bias == nullptr && a.z.data == nullptr &&
      a.activation.kind == DeviceActivation::kIdentity)
    return absl::OkStatus();
  kc::ChannelAffineMap map;
  map.layout = {.batch = a.n,
                .channels = a.m,
                .spatial = a.out_h * a.out_w,
                .channels_last = a.channels_last};
  map.shift = a.bias;
  map.act = ToKernel(a.activation.kind);
  map.alpha = a.activation.alpha;
  map.beta = a.activation.beta;
  return CudaStatus(
      kc::LaunchChannelAffine(map, {result.data, result.storage}, ToKernel(a.z),
                              ToKernel(a.y), stream),
      "convolution epilogue kernel");
}

// 1 warm-up and this many timed runs per candidate.
constexpr int kTimedRuns = 3;

// The most results asked of the heuristics: each algorithm may come back
// once per math type, best first.
constexpr int kMaxHeuristicResults = 2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT;

// What one Run works with.
struct ConvCall {
  cudnnHandle_t handle;  // its stream set to `stream`
  cudaStream_t stream;
  const ConvArgs* args;  // checked by CheckConvOperands
  void* workspace;
  size_t workspace_bytes;
};

// Where a key's choice is looked up and recorded.
struct ConvTuning {
  TuningCache* cache;  // may be null
  std::string key;     // "<identity> | cudnn-conv/1 ..."
  int max_timed_candidates;
};

// A candidate: an algorithm, the math type the heuristics rated it with,
// and the workspace it needs for the key's shapes.
struct ConvAlgo {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;

  // "algo<N>_math<M>": what the TuningCache records.
  std::string ToString() const {
    return absl::StrCat("algo", static_cast<int>(algo), "_math",
                        static_cast<int>(math));
  }
};

// The candidate a TuningCache choice names, or null.
const ConvAlgo* FindChoice(const std::vector<ConvAlgo>& candidates,
                           absl::string_view choice) {
  for (const ConvAlgo& c : candidates) {
    if (c.ToString() == choice) return &c;
  }
  return nullptr;
}

cudnnDataType_t DataTypeOf(const ConvKey& k) { return CudnnDataType(k.type); }

// The convolution descriptor's math type, which the heuristics rate
// algorithms for: FMA for exact FP32, TF32 allowed, or tensor cores for
// float16.
cudnnMathType_t MathTypeOf(const ConvKey& k) {
  if (k.half()) return CUDNN_TENSOR_OP_MATH;
  return k.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// Whether the rules let `perf` run a convolution of `k`.
bool Allowed(const ConvKey& k, const cudnnConvolutionFwdAlgoPerf_t& perf) {
  const cudnnDataType_t type = DataTypeOf(k);
  const cudnnMathType_t math = MathTypeOf(k);
  // The fused call runs without an activation only with this algorithm.
  const bool allowed =
      k.fused != CUDNN_ACTIVATION_IDENTITY ||
      perf.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  // Exact FP32 takes FMA algorithms only (no TF32 tensor cores); float32
  // data never takes one that converts it to float16.
  const bool math_ok =
      (math != CUDNN_FMA_MATH || perf.mathType == CUDNN_FMA_MATH) &&
      !(type == CUDNN_DATA_FLOAT &&
        perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
  return allowed && math_ok && perf.status == CUDNN_STATUS_SUCCESS;
}

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

  // Makes the descriptors of `k` and chooses its algorithm (cuda_conv.h):
  // the one `tuning` records, else the fastest candidate timed with `call`
  // (writing y or y_scratch) unless its stream is capturing, else the
  // first candidate.
  absl::Status Prepare(const ConvCall& call, const ConvKey& k,
                       const ConvTuning& tuning);
  // Enqueues the chosen algorithm on the call's buffers.
  absl::Status Run(const ConvCall& call) const {
    return Checked(Enqueue(call, chosen_.algo), chosen_);
  }

 private:
  absl::Status InitTensors(const ConvKey& k, cudnnDataType_t type);
  absl::Status InitConvolution(const ConvShapeKey& g, cudnnMathType_t math);
  absl::Status InitFused(const ConvKey& k);
  absl::StatusOr<std::vector<ConvAlgo>> Candidates(cudnnHandle_t handle,
                                                   const ConvKey& k,
                                                   size_t workspace);
  std::optional<size_t> WorkspaceOf(cudnnHandle_t handle,
                                    const cudnnConvolutionFwdAlgoPerf_t& perf);
  absl::Status Choose(const ConvCall& call,
                      const std::vector<ConvAlgo>& candidates,
                      const ConvTuning& tuning);
  // The fastest of the first `max_timed` candidates and its time, or the
  // last error when none ran. Timing runs write y or y_scratch.
  absl::StatusOr<std::pair<const ConvAlgo*, double>> Fastest(
      const ConvCall& call, const std::vector<ConvAlgo>& candidates,
      int max_timed);
  // Microseconds per run of `a` (its math type left on conv_).
  absl::StatusOr<double> Time(const ConvCall& call, const ConvAlgo& a);
  // Makes `a` the algorithm Run runs (its math type goes on conv_).
  absl::Status Adopt(const ConvAlgo& a);
  // The call Run makes, with algorithm `algo` and conv_'s math type.
  cudnnStatus_t Enqueue(const ConvCall& call,
                        cudnnConvolutionFwdAlgo_t algo) const;

  absl::Status Check(cudnnStatus_t status, const char* call) const {
    return CudnnStatus(dnn_, status, call);
  }
  // OK, or the error of Enqueue naming the algorithm and the workspace it
  // needs (formatted on failure only: a run allocates nothing).
  absl::Status Checked(cudnnStatus_t status, const ConvAlgo& a) const;

  const Cudnn& dnn_;
  DnnTensorDesc x_, y_;
  DnnTensorDesc bias_;  // the fused call's [1, m, 1, 1] bias
  DnnFilterDesc w_;
  DnnConvolutionDesc conv_;
  DnnActivationDesc act_;  // the fused call's; null when not fused
  ConvAlgo chosen_;
};

absl::Status PreparedConv::Prepare(const ConvCall& call, const ConvKey& k,
                                   const ConvTuning& tuning) {
  if (absl::Status s = InitTensors(k, DataTypeOf(k)); !s.ok()) return s;
  if (absl::Status s = InitConvolution(k.shape, MathTypeOf(k)); !s.ok())
    return s;
  if (k.fused >= 0) {
    if (absl::Status s = InitFused(k); !s.ok()) return s;
  }
  auto candidates = Candidates(call.handle, k, call.workspace_bytes);
  if (!candidates.ok()) return candidates.status();
  return Choose(call, *candidates, tuning);
}

// Dimensions are given in NCHW (KCRS) order whatever the layout; the
// format says how they lie in memory: NHWC for x and y, KRSC (cuDNN's
// NHWC filter format) for w.
absl::Status PreparedConv::InitTensors(const ConvKey& k, cudnnDataType_t type) {
  const cudnnTensorFormat_t format =
      k.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const ConvShapeKey& g = k.shape;
  absl::Status s =
      Check(dnn_.CreateTensorDescriptor(x_.receive()), "tensor descriptor");
  if (s.ok())
    s = Check(dnn_.SetTensor4dDescriptor(x_.get(), format, type, I(g.n), I(g.c),
                                         I(g.in_h), I(g.in_w)),
              "input");
  if (s.ok())
    s = Check(dnn_.CreateTensorDescriptor(y_.receive()), "tensor descriptor");
  if (s.ok())
    s = Check(dnn_.SetTensor4dDescriptor(y_.get(), format, type, I(g.n), I(g.m),
                                         I(g.out_h), I(g.out_w)),
              "output");
  if (s.ok())
    s = Check(dnn_.CreateFilterDescriptor(w_.receive()), "filter descriptor");
  if (s.ok())
    s = Check(dnn_.SetFilter4dDescriptor(w_.get(), type, format, I(g.m),
                                         I(g.c / g.groups), I(g.kernel_h),
                                         I(g.kernel_w)),
              "filter");
  return s;
}

absl::Status PreparedConv::InitConvolution(const ConvShapeKey& g,
                                           cudnnMathType_t math) {
  absl::Status s = Check(dnn_.CreateConvolutionDescriptor(conv_.receive()),
                         "convolution descriptor");
  if (s.ok())
    s = Check(dnn_.SetConvolution2dDescriptor(
                  conv_.get(), I(g.pad_top), I(g.pad_left), I(g.stride_h),
                  I(g.stride_w), I(g.dilation_h), I(g.dilation_w),
                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "convolution");
  if (s.ok())
    s = Check(dnn_.SetConvolutionGroupCount(conv_.get(), I(g.groups)),
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
    s = Check(
        dnn_.SetTensor4dDescriptor(bias_.get(), CUDNN_TENSOR_NCHW,
                                   CUDNN_DATA_FLOAT, 1, I(k.shape.m), 1, 1),
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

// The heuristics' algorithms, best first, that the rules allow and whose
// real workspace fits, without repeats. Internal when there is none.
absl::StatusOr<std::vector<ConvAlgo>> PreparedConv::Candidates(
    cudnnHandle_t handle, const ConvKey& k, size_t workspace) {
  cudnnConvolutionFwdAlgoPerf_t perf[kMaxHeuristicResults];
  int found = 0;
  absl::Status s = Check(dnn_.GetConvolutionForwardAlgorithm(
                             handle, x_.get(), w_.get(), conv_.get(), y_.get(),
                             kMaxHeuristicResults, &found, perf),
                         "cudnnGetConvolutionForwardAlgorithm_v7");
  if (!s.ok()) return s;
  std::vector<ConvAlgo> candidates;
  for (int a = 0; a < found; ++a) {
    if (!Allowed(k, perf[a]) || perf[a].memory > workspace) continue;
    const std::optional<size_t> needed = WorkspaceOf(handle, perf[a]);
    if (!needed.has_value() || *needed > workspace) continue;
    const ConvAlgo candidate{perf[a].algo, perf[a].mathType, *needed};
    if (FindChoice(candidates, candidate.ToString()) == nullptr)
      candidates.push_back(candidate);
  }
  if (candidates.empty()) {
    return absl::InternalError(
        absl::StrCat("cuDNN has no ", DeviceFloatName(k.type), " ",
                     LayoutName(k.channels_last),
                     " algorithm for this convolution within the workspace"));
  }
  return candidates;
}

// The heuristics' memory is an estimate: cuDNN answers
// CUDNN_STATUS_BAD_PARAM at run time when the workspace is smaller than the
// algorithm needs for these shapes, so this asks for the real size with the
// math type the algorithm was rated with (left on conv_: Adopt sets the
// chosen one's). Nullopt when cuDNN cannot say.
std::optional<size_t> PreparedConv::WorkspaceOf(
    cudnnHandle_t handle, const cudnnConvolutionFwdAlgoPerf_t& perf) {
  size_t needed = 0;
  if (dnn_.SetConvolutionMathType(conv_.get(), perf.mathType) !=
          CUDNN_STATUS_SUCCESS ||
      dnn_.GetConvolutionForwardWorkspaceSize(handle, x_.get(), w_.get(),
                                              conv_.get(), y_.get(), perf.algo,
                                              &needed) != CUDNN_STATUS_SUCCESS)
    return std::nullopt;
  return needed;
}

absl::Status PreparedConv::Choose(const ConvCall& call,
                                  const std::vector<ConvAlgo>& candidates,
                                  const ConvTuning& tuning) {
  if (tuning.cache != nullptr) {
    const std::optional<TuningChoice> known = tuning.cache->Find(tuning.key);
    const ConvAlgo* algo =
        known.has_value() ? FindChoice(candidates, known->choice) : nullptr;
    if (algo != nullptr) return Adopt(*algo);
  }
  // Nothing can wait for a capturing stream, so nothing is timed.
  if (StreamIsCapturing(call.stream)) return Adopt(candidates.front());
  auto fastest = Fastest(call, candidates, tuning.max_timed_candidates);
  if (!fastest.ok()) return fastest.status();
  absl::Status s = Adopt(*fastest->first);
  if (s.ok() && tuning.cache != nullptr) {
    tuning.cache->Insert(tuning.key, {chosen_.ToString(), fastest->second});
  }
  return s;
}

absl::StatusOr<std::pair<const ConvAlgo*, double>> PreparedConv::Fastest(
    const ConvCall& call, const std::vector<ConvAlgo>& candidates,
    int max_timed) {
  const size_t count =
      std::min(candidates.size(), static_cast<size_t>(std::max(max_timed, 1)));
  std::optional<std::pair<const ConvAlgo*, double>> fastest;
  absl::Status last;
  for (size_t i = 0; i < count; ++i) {
    const ConvAlgo& a = candidates[i];
    absl::StatusOr<double> microseconds = Time(call, a);
    if (!microseconds.ok()) {  // skipped
      last = microseconds.status();
      continue;
    }
    if (!fastest.has_value() || *microseconds < fastest->second)
      fastest = std::make_pair(&a, *microseconds);
  }
  if (!fastest.has_value()) return last;
  return *fastest;
}

absl::StatusOr<double> PreparedConv::Time(const ConvCall& call,
                                          const ConvAlgo& a) {
  absl::Status s =
      Check(dnn_.SetConvolutionMathType(conv_.get(), a.math), "math type");
  if (!s.ok()) return s;
  return TimeOnStream(call.stream, kTimedRuns,
                      [&] { return Checked(Enqueue(call, a.algo), a); });
}

absl::Status PreparedConv::Adopt(const ConvAlgo& a) {
  absl::Status s =
      Check(dnn_.SetConvolutionMathType(conv_.get(), a.math), "math type");
  if (s.ok()) chosen_ = a;
  return s;
}

cudnnStatus_t PreparedConv::Enqueue(const ConvCall& call,
                                    cudnnConvolutionFwdAlgo_t algo) const {
  const ConvArgs& a = *call.args;
  const float one = 1.0f, zero = 0.0f;
  if (fused()) {  // y = act(conv + z + bias); z is y's shape, never y
    return dnn_.ConvolutionBiasActivationForward(
        call.handle, &one, x_.get(), a.x.data, w_.get(), a.w.data, conv_.get(),
        algo, call.workspace, call.workspace_bytes, &one, y_.get(), a.z.data,
        bias_.get(), a.bias, act_.get(), y_.get(), a.y.data);
  }
  return dnn_.ConvolutionForward(call.handle, &one, x_.get(), a.x.data,
                                 w_.get(), a.w.data, conv_.get(), algo,
                                 call.workspace, call.workspace_bytes, &zero,
                                 y_.get(), ConvResultOf(a).data);
}

absl::Status PreparedConv::Checked(cudnnStatus_t status,
                                   const ConvAlgo& a) const {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return CudnnStatus(
      dnn_, status,
      absl::StrCat(fused() ? "cudnnConvolutionBiasActivationForward"
                           : "cudnnConvolutionForward",
                   " (", a.ToString(), ", ", a.workspace_bytes,
                   "-byte workspace)"));
}

CudaConv::CudaConv(const Cudnn& dnn, const Options& options,
                   std::string key_prefix)
    : dnn_(dnn),
      options_(options),
      key_prefix_(std::move(key_prefix)),
      handle_(dnn) {}

CudaConv::~CudaConv() = default;

absl::StatusOr<std::unique_ptr<CudaConv>> CudaConv::Create(
    int device_ordinal, const Options& options) {
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) return dnn.status();
  absl::StatusOr<std::string> identity = CudnnTuningIdentity(device_ordinal);
  if (!identity.ok()) return identity.status();
  std::unique_ptr<CudaConv> conv(
      new CudaConv(**dnn, options, absl::StrCat(*identity, " | ")));
  absl::Status s = CudnnStatus(**dnn, (*dnn)->Create(conv->handle_.receive()),
                               "cudnnCreate");
  if (!s.ok()) return s;
  return conv;
}

absl::Status CheckConvOperands(const ConvArgs& a) {
  if (a.x.type != a.w.type) {
    return absl::InvalidArgumentError(
        "convolution: x and w must both be float32 or of one 16-bit type");
  }
  if (!a.x.is_16bit() && a.y.is_16bit()) {
    return absl::InvalidArgumentError(
        "convolution: a float32 convolution writes a float32 y");
  }
  if (a.y.is_16bit() && a.y.type != a.x.type) {
    return absl::InvalidArgumentError(
        "convolution: a 16-bit y must have x's type");
  }
  if (a.x.is_16bit() && !a.y.is_16bit() && a.y_scratch == nullptr) {
    return absl::InvalidArgumentError(
        "convolution: a 16-bit convolution with a float32 y needs "
        "y_scratch");
  }
  if (a.z.data != nullptr && a.z.data == a.y.data) {
    return absl::InvalidArgumentError("convolution: the residual z is y");
  }
  return absl::OkStatus();
}

absl::Status CudaConv::Run(const ConvArgs& args, void* workspace,
                           cudaStream_t stream) {
  absl::Status s = CheckConvOperands(args);
  if (!s.ok()) return s;
  s = CudnnStatus(dnn_, dnn_.SetStream(handle_.get(), stream),
                  "cudnnSetStream");
  if (!s.ok()) return s;
  const ConvCall call{handle_.get(), stream, &args, workspace,
                      options_.workspace_bytes};
  const ConvKey key = KeyOf(args, options_.tf32);
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {  // descriptors made, algorithm chosen
    auto prepared = std::make_unique<PreparedConv>(dnn_);
    s = prepared->Prepare(call, key,
                          {options_.tuning_cache.get(),
                           absl::StrCat(key_prefix_, TuningKeyOf(key)),
                           options_.max_timed_candidates});
    if (!s.ok()) return s;
    it = prepared_.emplace(key, std::move(prepared)).first;
  }
  // Runs even after timing runs wrote y: its error is this call's.
  s = it->second->Run(call);
  if (!s.ok() || it->second->fused()) return s;
  return RunEpilogue(args, stream);
}

}  // namespace coalesce
