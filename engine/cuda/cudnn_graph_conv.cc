// CudnnGraphConv (cudnn_graph_conv.h): the operation graph of one ConvArgs,
// the per-shape plans, and the timed choice of their engines, on the
// backend-API helpers of cudnn_backend.h.
#include "engine/cuda/cudnn_graph_conv.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/cudnn_backend.h"
#include "engine/cuda/graph_conv_scope.h"

namespace coalesce {
namespace {

// The unique ids of the graph's tensors: the variant pack's are the first
// five; the virtual intermediates follow.
enum TensorUid : int64_t {
  kUidX = 1,
  kUidW,
  kUidBias,
  kUidZ,
  kUidY,
  kUidConvOut,
  kUidFirstIntermediate,
};

// 1 warm-up and this many timed runs per candidate.
constexpr int kTimedRuns = 3;

// What goes wrong while a graph is built or an engine chosen is a reason to
// run the convolution the legacy way (Unimplemented), except running out of
// memory, which may pass, and a sticky device fault.
absl::Status Unsupported(const absl::Status& status) {
  if (status.ok() || absl::IsResourceExhausted(status) ||
      IsStickyCudaStatus(status)) {
    return status;
  }
  return absl::UnimplementedError(
      absl::StrCat("cuDNN graph convolution: ", status.message()));
}

// ---------------------------------------------------------------------------
// What the graph computes.

// The activations cuDNN applies as one pointwise operation.
struct FusedActivation {
  DeviceActivation kind;
  cudnnPointwiseMode_t mode;
  const char* name;  // in tuning keys
};
constexpr FusedActivation kFusedActivations[] = {
    {DeviceActivation::kIdentity, CUDNN_POINTWISE_IDENTITY, "identity"},
    {DeviceActivation::kRelu, CUDNN_POINTWISE_RELU_FWD, "relu"},
    {DeviceActivation::kLeakyRelu, CUDNN_POINTWISE_RELU_FWD, "leaky_relu"},
    {DeviceActivation::kClip, CUDNN_POINTWISE_RELU_FWD, "clip"},
    {DeviceActivation::kSigmoid, CUDNN_POINTWISE_SIGMOID_FWD, "sigmoid"},
    {DeviceActivation::kTanh, CUDNN_POINTWISE_TANH_FWD, "tanh"},
    {DeviceActivation::kGeluErf, CUDNN_POINTWISE_GELU_FWD, "gelu_erf"},
    {DeviceActivation::kGeluTanh, CUDNN_POINTWISE_GELU_APPROX_TANH_FWD,
     "gelu_tanh"},
    // x sigmoid(swish_beta x), swish_beta the activation's alpha.
    {DeviceActivation::kSilu, CUDNN_POINTWISE_SWISH_FWD, "silu"},
};

const FusedActivation* FindActivation(DeviceActivation kind) {
  for (const FusedActivation& a : kFusedActivations) {
    if (a.kind == kind) return &a;
  }
  return nullptr;
}

// False when cuDNN has no pointwise mode for the activation; `*op` is empty
// for the identity (nothing to apply).
bool MapActivation(DeviceActivation kind, float alpha, float beta,
                   std::optional<PointwiseSpec>* op) {
  op->reset();
  const FusedActivation* fused = FindActivation(kind);
  if (fused == nullptr) return false;
  if (kind == DeviceActivation::kIdentity) return true;
  if (kind == DeviceActivation::kClip && !(alpha <= beta)) return false;
  if (kind == DeviceActivation::kLeakyRelu && std::isnan(alpha)) return false;
  PointwiseSpec spec;
  spec.mode = fused->mode;
  if (kind == DeviceActivation::kLeakyRelu) {  // x >= 0 ? x : alpha x
    spec.lower_clip_slope = alpha;
  } else if (kind == DeviceActivation::kClip) {  // min(max(x, alpha), beta)
    spec.lower_clip = std::clamp<double>(alpha, -FLT_MAX, FLT_MAX);
    spec.upper_clip = std::clamp<double>(beta, -FLT_MAX, FLT_MAX);
  } else if (kind == DeviceActivation::kSilu) {
    spec.swish_beta = alpha;
  }
  *op = spec;
  return true;
}

bool HasParameters(DeviceActivation kind) {
  return kind == DeviceActivation::kLeakyRelu ||
         kind == DeviceActivation::kClip || kind == DeviceActivation::kSilu;
}

GraphConvKey KeyOf(const ConvArgs& a) {
  GraphConvKey k;
  k.shape = ConvShapeKey::Of(a);
  k.channels_last = a.channels_last;
  k.x_type = a.x.type;
  k.y_type = a.y.type;
  k.has_bias = a.bias != nullptr;
  k.has_z = a.z.data != nullptr;
  k.z_type = k.has_z ? a.z.type : DeviceFloat::kFloat;
  const ActivationSpec& act = a.activation;
  k.activation = act.kind;
  k.alpha = HasParameters(act.kind) ? act.alpha : 0.0f;
  k.beta = act.kind == DeviceActivation::kClip ? act.beta : 0.0f;
  return k;
}

// The tuning key after the device identity: every field of the
// GraphConvKey, readable.
std::string ShapeKeyOf(const GraphConvKey& k) {
  std::string key =
      absl::StrCat("cudnn-graph-conv/1 x=", TuningTypeName(k.x_type), " ",
                   k.shape.ToString(), k.channels_last ? " nhwc" : " nchw",
                   " y=", TuningTypeName(k.y_type));
  if (k.has_bias) absl::StrAppend(&key, " bias=f32");
  if (k.has_z) absl::StrAppend(&key, " z=", TuningTypeName(k.z_type));
  absl::StrAppend(&key, " act=", FindActivation(k.activation)->name);
  // SiLU's scale of 1 stays out of the key: keys tuned before it was a
  // parameter still match.
  if (HasParameters(k.activation) &&
      !(k.activation == DeviceActivation::kSilu && k.alpha == 1.0f)) {
    absl::StrAppend(&key, "(", k.alpha, ",", k.beta, ")");
  }
  return key;
}

absl::Status CheckSupported(const ConvArgs& a, bool nchw_epilogues) {
  if (a.x.data == nullptr || a.w.data == nullptr || a.y.data == nullptr) {
    return absl::InvalidArgumentError("convolution without x, w or y");
  }
  if (a.z.data != nullptr && a.z.data == a.y.data) {
    return absl::InvalidArgumentError("convolution residual z is y");
  }
  if (a.groups <= 0 || a.c % a.groups != 0 || a.m % a.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution groups ", a.groups, " do not divide ", a.c, " and ", a.m));
  }
  if (!a.x.is_16bit() || a.w.type != a.x.type) {
    return absl::UnimplementedError(
        "cuDNN graph convolution: float32 x or w (legacy path)");
  }
  if (a.y.is_16bit() && a.y.type != a.x.type) {
    return absl::InvalidArgumentError(
        "convolution: a 16-bit y must have x's type");
  }
  if (absl::Status s = GraphConvLayoutAllows(a, nchw_epilogues); !s.ok())
    return s;
  std::optional<PointwiseSpec> act;
  if (!MapActivation(a.activation.kind, a.activation.alpha, a.activation.beta,
                     &act)) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN graph convolution: activation ",
                     static_cast<int>(a.activation.kind), " not fused"));
  }
  return absl::OkStatus();
}

// The variant pack's pointers: x, w, bias, z, y (null when absent), then
// the workspace.
struct Pointers {
  std::array<void*, 6> p{};
  bool operator==(const Pointers& o) const { return p == o.p; }
};

Pointers PointersOf(const ConvArgs& a, void* workspace) {
  return {{const_cast<void*>(a.x.data), const_cast<void*>(a.w.data),
           const_cast<float*>(a.bias), const_cast<void*>(a.z.data), a.y.data,
           workspace}};
}

absl::Status CheckAligned(const Pointers& pointers) {
  for (void* p : pointers.p) {
    if (reinterpret_cast<uintptr_t>(p) % kBackendAlignment != 0) {
      return absl::UnimplementedError(
          "cuDNN graph convolution: a tensor not 16-byte aligned");
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The operation graph.

// Builds the operation graph of one GraphConvKey and keeps every
// descriptor it refers to.
class GraphBuilder {
 public:
  GraphBuilder(const Cudnn& dnn, const GraphConvKey& k,
               std::vector<BackendDesc>* parts)
      : dnn_(dnn), k_(k), g_(k.shape), parts_(parts) {}

  absl::StatusOr<BackendDesc> Build(cudnnHandle_t handle, bool dynamic_shapes);

 private:
  // Makes a tensor of `dims` (n, c, h, w whatever the layout), keeps it,
  // and returns it.
  absl::StatusOr<cudnnBackendDescriptor_t> Tensor(
      int64_t uid, cudnnDataType_t type, const std::array<int64_t, 4>& dims,
      bool is_virtual) {
    return Keep(MakeBackendTensor(dnn_, {.uid = uid,
                                         .type = type,
                                         .dims = dims,
                                         .channels_last = k_.channels_last,
                                         .is_virtual = is_virtual}));
  }
  // A tensor of y's shape.
  absl::StatusOr<cudnnBackendDescriptor_t> LikeY(int64_t uid,
                                                 cudnnDataType_t type,
                                                 bool is_virtual) {
    return Tensor(uid, type, {g_.n, g_.m, g_.out_h, g_.out_w}, is_virtual);
  }
  // The pointwise stages after the convolution, in order.
  struct Stage {
    PointwiseSpec spec;
    cudnnBackendDescriptor_t b = nullptr;  // the second operand, if any
  };
  absl::StatusOr<std::vector<Stage>> Stages();
  absl::StatusOr<cudnnBackendDescriptor_t> Keep(
      absl::StatusOr<BackendDesc> desc);
  absl::StatusOr<cudnnBackendDescriptor_t> Convolution(
      cudnnBackendDescriptor_t y);

  const Cudnn& dnn_;
  const GraphConvKey& k_;
  const ConvShapeKey& g_;  // k_'s geometry
  std::vector<BackendDesc>* parts_;
};

absl::StatusOr<cudnnBackendDescriptor_t> GraphBuilder::Keep(
    absl::StatusOr<BackendDesc> desc) {
  if (!desc.ok()) return desc.status();
  parts_->push_back(*std::move(desc));
  return parts_->back().get();
}

// The convolution operation x * w -> y. Groups are implied by the shapes:
// x has c channels and w c / groups.
absl::StatusOr<cudnnBackendDescriptor_t> GraphBuilder::Convolution(
    cudnnBackendDescriptor_t y) {
  auto x =
      Tensor(kUidX, CudnnDataType(k_.x_type), {g_.n, g_.c, g_.in_h, g_.in_w},
             /*is_virtual=*/false);
  if (!x.ok()) return x.status();
  auto w = Tensor(kUidW, CudnnDataType(k_.x_type),
                  {g_.m, g_.c / g_.groups, g_.kernel_h, g_.kernel_w},
                  /*is_virtual=*/false);
  if (!w.ok()) return w.status();
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  auto conv = Keep(
      BackendDescBuilder(dnn_, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                         "convolution")
          .Type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
          .Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
               &mode)
          .Int(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2)
          .Ints(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {g_.pad_top, g_.pad_left})
          .Ints(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {g_.pad_top, g_.pad_left})
          .Ints(CUDNN_ATTR_CONVOLUTION_DILATIONS,
                {g_.dilation_h, g_.dilation_w})
          .Ints(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                {g_.stride_h, g_.stride_w})
          .Finalize());
  if (!conv.ok()) return conv.status();
  return Keep(
      BackendDescBuilder(dnn_,
                         CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                         "convolution operation")
          .Ref(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x)
          .Ref(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w)
          .Ref(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
          .Ref(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv)
          .Float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
          .Float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f)
          .Finalize());
}

// + bias, + z, then the activation, as the key asks.
absl::StatusOr<std::vector<GraphBuilder::Stage>> GraphBuilder::Stages() {
  std::vector<Stage> stages;
  const PointwiseSpec add{CUDNN_POINTWISE_ADD};
  if (k_.has_bias) {
    auto bias = Tensor(kUidBias, CUDNN_DATA_FLOAT, {1, g_.m, 1, 1},
                       /*is_virtual=*/false);
    if (!bias.ok()) return bias.status();
    stages.push_back({add, *bias});
  }
  if (k_.has_z) {
    auto z = LikeY(kUidZ, CudnnDataType(k_.z_type), /*is_virtual=*/false);
    if (!z.ok()) return z.status();
    stages.push_back({add, *z});
  }
  std::optional<PointwiseSpec> act;
  MapActivation(k_.activation, k_.alpha, k_.beta, &act);
  if (act.has_value()) stages.push_back({*act, nullptr});
  return stages;
}

// conv -> stages -> y; intermediates are virtual float32 tensors of y's
// shape, the last operation writes y.
absl::StatusOr<BackendDesc> GraphBuilder::Build(cudnnHandle_t handle,
                                                bool dynamic_shapes) {
  auto stages = Stages();
  if (!stages.ok()) return stages.status();
  auto y = LikeY(kUidY, CudnnDataType(k_.y_type), /*is_virtual=*/false);
  if (!y.ok()) return y.status();
  auto out = stages->empty() ? y : LikeY(kUidConvOut, CUDNN_DATA_FLOAT, true);
  if (!out.ok()) return out.status();
  std::vector<cudnnBackendDescriptor_t> ops;
  auto conv = Convolution(*out);
  if (!conv.ok()) return conv.status();
  ops.push_back(*conv);
  for (size_t i = 0; i < stages->size(); ++i) {
    auto next = i + 1 == stages->size()
                    ? y
                    : LikeY(kUidFirstIntermediate + static_cast<int64_t>(i),
                            CUDNN_DATA_FLOAT, /*is_virtual=*/true);
    if (!next.ok()) return next.status();
    auto op = Keep(MakePointwiseOp(dnn_, (*stages)[i].spec, *out,
                                   (*stages)[i].b, *next, parts_));
    if (!op.ok()) return op.status();
    ops.push_back(*op);
    out = next;
  }
  return MakeOperationGraph(dnn_, handle, ops, dynamic_shapes);
}

}  // namespace

// ---------------------------------------------------------------------------

// What one Run works with.
struct GraphConvCall {
  cudnnHandle_t handle;  // its stream set to `stream`
  cudaStream_t stream;
  Pointers pointers;
  size_t workspace_bytes;
};

// One shape's graph and chosen execution plan (or why it has none), with the
// variant packs of the buffer sets it ran with.
class FusedConvPlan {
 public:
  explicit FusedConvPlan(const Cudnn& dnn)
      : dnn_(dnn),
        graph_(dnn),
        config_(dnn),
        plan_(dnn),
        packs_(dnn, {kUidX, kUidW, kUidBias, kUidZ, kUidY}) {}

  // Builds the graph and chooses its engine: the one recorded under
  // `tuning_key`, else `sibling` (the choice tuned for the same convolution
  // at another batch size, BatchSiblingChoices) when it still builds and
  // fits, else the fastest candidate, timed with the call's buffers
  // (writing y) unless its stream is capturing. Unimplemented when no
  // engine runs it, which Execute answers from then on. With
  // `kernel_cache` (the convolution's, null without the option; made from
  // this graph when still empty) the graph is a dynamic-shape one and its
  // plans are made with the cache.
  absl::Status Prepare(const GraphConvCall& call, const GraphConvKey& key,
                       const std::string& tuning_key,
                       const std::optional<std::string>& sibling,
                       const CudnnGraphConv::Options& options,
                       BackendDesc* kernel_cache) {
    unsupported_ =
        Choose(call, key, tuning_key, sibling, options, kernel_cache);
    return unsupported_;
  }
  // The chosen engine ("" without one), and whether it was tuned for this
  // shape (recorded or timed) rather than taken from a sibling.
  const std::string& choice() const { return choice_; }
  bool tuned() const { return tuned_; }
  // Enqueues the chosen plan on the call's buffers; its error, if any.
  absl::Status Execute(const GraphConvCall& call);

 private:
  struct Candidate {
    BackendDesc config;
    BackendPlan plan;
    std::string choice;
  };
  absl::Status Choose(const GraphConvCall& call, const GraphConvKey& key,
                      const std::string& tuning_key,
                      const std::optional<std::string>& sibling,
                      const CudnnGraphConv::Options& options,
                      BackendDesc* kernel_cache);
  // Builds the graph (a dynamic-shape one with `kernel_cache`) and sets
  // cache_ to the kernel cache its plans use, if any.
  absl::Status BuildGraph(cudnnHandle_t handle, const GraphConvKey& key,
                          BackendDesc* kernel_cache);
  // The configuration recorded as `text`, if it still builds and fits.
  absl::Status Rebuild(cudnnHandle_t handle, absl::string_view text,
                       size_t workspace_bytes);
  absl::StatusOr<std::vector<Candidate>> Candidates(cudnnHandle_t handle,
                                                    int max_candidates,
                                                    size_t workspace_bytes);
  // Keeps the fastest of `candidates` (the first without `timed`) and
  // returns its time (0 without `timed`). Timing runs write y.
  absl::StatusOr<double> Keep(const GraphConvCall& call,
                              std::vector<Candidate> candidates, bool timed);
  void Adopt(Candidate winner);
  // Whether the adopted plan runs on the call's buffers (writing y).
  bool RunsOnce(const GraphConvCall& call) {
    auto pack = PackFor(call.pointers);
    return pack.ok() && TimeBackendPlan(dnn_, call.handle, plan_.get(), *pack,
                                        call.stream, /*runs=*/1)
                            .ok();
  }
  // The variant pack of `pointers`.
  absl::StatusOr<cudnnBackendDescriptor_t> PackFor(const Pointers& pointers) {
    return packs_.Get(absl::MakeConstSpan(pointers.p.data(), 5),
                      /*workspace=*/pointers.p[5]);
  }

  const Cudnn& dnn_;
  std::vector<BackendDesc> parts_;  // what graph_ and config_ refer to
  BackendDesc graph_;
  // The kernel cache plans are made with (owned by CudnnGraphConv), or null.
  cudnnBackendDescriptor_t cache_ = nullptr;
  BackendDesc config_;
  BackendDesc plan_;  // null until chosen
  int64_t workspace_bytes_ = 0;
  std::string choice_;
  bool tuned_ = false;
  absl::Status unsupported_;  // why plan_ is null
  VariantPackCache packs_;    // x, w, bias, z, y
};

absl::Status FusedConvPlan::Choose(const GraphConvCall& call,
                                   const GraphConvKey& key,
                                   const std::string& tuning_key,
                                   const std::optional<std::string>& sibling,
                                   const CudnnGraphConv::Options& options,
                                   BackendDesc* kernel_cache) {
  if (absl::Status s = BuildGraph(call.handle, key, kernel_cache); !s.ok()) {
    return Unsupported(s);
  }
  TuningCache* cache = options.tuning_cache.get();
  if (cache != nullptr) {
    std::optional<TuningChoice> known = cache->Find(tuning_key);
    if (known.has_value() &&
        Rebuild(call.handle, known->choice, call.workspace_bytes).ok()) {
      tuned_ = true;
      return absl::OkStatus();
    }
  }
  // While capturing nothing can be timed or run to check, and every plan
  // finalized compiles kernels: only the first candidate is built.
  const bool timed = !StreamIsCapturing(call.stream);
  // One plan built instead of up to max_timed_candidates, and run once so
  // that one that builds but does not run at this size falls back to the
  // candidates; not recorded in the cache, which keeps only what was timed
  // for the key.
  if (timed && sibling.has_value() &&
      Rebuild(call.handle, *sibling, call.workspace_bytes).ok()) {
    if (RunsOnce(call)) return absl::OkStatus();
    Adopt({BackendDesc(dnn_), {BackendDesc(dnn_), 0}, ""});  // none kept
  }
  auto candidates =
      Candidates(call.handle, timed ? options.max_timed_candidates : 1,
                 call.workspace_bytes);
  if (!candidates.ok()) return Unsupported(candidates.status());
  if (candidates->empty()) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN graph convolution: no engine runs ", tuning_key,
                     " within ", call.workspace_bytes, " bytes of workspace"));
  }
  auto microseconds = Keep(call, *std::move(candidates), timed);
  if (!microseconds.ok()) return microseconds.status();
  tuned_ = timed;
  if (timed && cache != nullptr) {
    cache->Insert(tuning_key, {choice_, *microseconds});
  }
  return absl::OkStatus();
}

absl::Status FusedConvPlan::BuildGraph(cudnnHandle_t handle,
                                       const GraphConvKey& key,
                                       BackendDesc* kernel_cache) {
  auto graph = GraphBuilder(dnn_, key, &parts_)
                   .Build(handle, /*dynamic_shapes=*/kernel_cache != nullptr);
  if (!graph.ok()) return graph.status();
  graph_ = *std::move(graph);
  if (kernel_cache == nullptr) return absl::OkStatus();
  if (kernel_cache->get() == nullptr) {
    auto made = MakeKernelCache(dnn_, graph_.get());
    if (!made.ok() && absl::IsResourceExhausted(made.status())) {
      return made.status();
    }
    if (made.ok()) *kernel_cache = *std::move(made);  // else: no cache
  }
  cache_ = kernel_cache->get();
  return absl::OkStatus();
}

absl::Status FusedConvPlan::Rebuild(cudnnHandle_t handle,
                                    absl::string_view text,
                                    size_t workspace_bytes) {
  std::optional<EngineChoice> choice = EngineChoice::Parse(text);
  if (!choice.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("bad choice ", text));
  }
  auto config = EngineConfigOf(dnn_, graph_.get(), *choice, &parts_);
  if (!config.ok()) return config.status();
  auto plan = MakeBackendPlan(dnn_, handle, config->get(), cache_);
  if (!plan.ok()) return plan.status();
  if (!plan->FitsIn(workspace_bytes)) {
    return absl::ResourceExhaustedError("workspace too small");
  }
  Adopt({*std::move(config), *std::move(plan), std::string(text)});
  return absl::OkStatus();
}

// The configurations of heuristics A, then FALLBACK, that reduce in float32
// and make a plan within the workspace, without repeats, at most
// `max_candidates`. Configurations that fail are skipped; running out of
// memory is an error.
absl::StatusOr<std::vector<FusedConvPlan::Candidate>> FusedConvPlan::Candidates(
    cudnnHandle_t handle, int max_candidates, size_t workspace_bytes) {
  std::vector<Candidate> found;
  std::set<std::string> seen;
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    auto configs = HeuristicConfigs(dnn_, graph_.get(), mode);
    if (!configs.ok() && absl::IsResourceExhausted(configs.status())) {
      return configs.status();
    }
    if (!configs.ok()) continue;  // this mode has nothing for the graph
    for (BackendDesc& config : *configs) {
      if (static_cast<int>(found.size()) >= max_candidates) return found;
      auto choice = EngineChoiceOf(dnn_, config.get());
      if (!choice.ok() || choice->reduced_precision ||
          !seen.insert(choice->ToString()).second) {
        continue;
      }
      auto plan = MakeBackendPlan(dnn_, handle, config.get(), cache_);
      if (!plan.ok() && absl::IsResourceExhausted(plan.status())) {
        return plan.status();
      }
      if (!plan.ok() || !plan->FitsIn(workspace_bytes)) continue;
      found.push_back(
          {std::move(config), *std::move(plan), choice->ToString()});
    }
  }
  return found;
}

absl::StatusOr<double> FusedConvPlan::Keep(const GraphConvCall& call,
                                           std::vector<Candidate> candidates,
                                           bool timed) {
  size_t best = 0;
  std::optional<double> fastest;
  if (timed) {
    auto pack = PackFor(call.pointers);
    if (!pack.ok()) return Unsupported(pack.status());
    absl::Status last;
    for (size_t i = 0; i < candidates.size(); ++i) {
      auto microseconds =
          TimeBackendPlan(dnn_, call.handle, candidates[i].plan.plan.get(),
                          *pack, call.stream, kTimedRuns);
      if (!microseconds.ok()) {  // skipped
        last = microseconds.status();
        continue;
      }
      if (!fastest.has_value() || *microseconds < *fastest) {
        fastest = *microseconds;
        best = i;
      }
    }
    // No candidate ran: the graph is not runnable as built (a sticky
    // device fault, if that is the cause, surfaces on the stream).
    if (!fastest.has_value()) return Unsupported(last);
  }
  Adopt(std::move(candidates[best]));
  return fastest.value_or(0.0);
}

void FusedConvPlan::Adopt(Candidate winner) {
  config_ = std::move(winner.config);
  plan_ = std::move(winner.plan.plan);
  workspace_bytes_ = winner.plan.workspace_bytes;
  choice_ = std::move(winner.choice);
}

absl::Status FusedConvPlan::Execute(const GraphConvCall& call) {
  if (plan_.get() == nullptr) return unsupported_;
  auto pack = PackFor(call.pointers);
  if (!pack.ok()) return pack.status();
  const cudnnStatus_t status =
      dnn_.BackendExecute(call.handle, plan_.get(), *pack);
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return BackendStatus(dnn_, status,
                       absl::StrCat("cudnnBackendExecute (", choice_, ", ",
                                    workspace_bytes_, "-byte workspace)"));
}

// ---------------------------------------------------------------------------

CudnnGraphConv::CudnnGraphConv(const Cudnn& dnn, const Options& options,
                               std::string key_prefix)
    : dnn_(dnn),
      options_(options),
      key_prefix_(std::move(key_prefix)),
      handle_(dnn) {}

CudnnGraphConv::~CudnnGraphConv() = default;

absl::StatusOr<std::unique_ptr<CudnnGraphConv>> CudnnGraphConv::Create(
    int device_ordinal, const Options& options) {
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) return dnn.status();
  absl::StatusOr<std::string> identity = CudnnTuningIdentity(device_ordinal);
  if (!identity.ok()) return identity.status();
  std::unique_ptr<CudnnGraphConv> conv(
      new CudnnGraphConv(**dnn, options, absl::StrCat(*identity, " | ")));
  absl::Status s = CudnnStatus(**dnn, (*dnn)->Create(conv->handle_.receive()),
                               "cudnnCreate");
  if (!s.ok()) return s;
  return conv;
}

absl::StatusOr<FusedConvPlan*> CudnnGraphConv::PlanFor(
    const GraphConvKey& key, const GraphConvCall& call) {
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    GraphConvKey any_batch = key;
    any_batch.shape.n = 0;
    const std::string operation = ShapeKeyOf(any_batch);
    auto plan = std::make_unique<FusedConvPlan>(dnn_);
    BackendDesc* kernel_cache = nullptr;
    if (options_.kernel_cache && HasKernelCache(dnn_)) {
      kernel_cache = &kernel_caches_.try_emplace(operation, BackendDesc(dnn_))
                          .first->second;
    }
    absl::Status s =
        plan->Prepare(call, key, absl::StrCat(key_prefix_, ShapeKeyOf(key)),
                      options_.adopt_batch_siblings
                          ? siblings_.NearestAtLeast(operation, key.shape.n)
                          : std::nullopt,
                      options_, kernel_cache);
    // An unsupported shape is remembered (its plan stays null and answers
    // Unimplemented); anything else may pass and is tried again next time.
    if (!s.ok() && !absl::IsUnimplemented(s)) return s;
    if (s.ok() && plan->tuned()) {
      siblings_.Record(operation, key.shape.n, plan->choice());
    }
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return it->second.get();
}

absl::Status CudnnGraphConv::Run(cudaStream_t stream, const ConvArgs& args,
                                 void* workspace, size_t workspace_bytes) {
  if (absl::Status s = CheckSupported(args, options_.nchw_epilogues); !s.ok())
    return s;
  const GraphConvCall call{handle_.get(), stream, PointersOf(args, workspace),
                           workspace_bytes};
  if (absl::Status s = CheckAligned(call.pointers); !s.ok()) return s;
  absl::Status s = CudnnStatus(dnn_, dnn_.SetStream(handle_.get(), stream),
                               "cudnnSetStream");
  if (!s.ok()) return s;
  absl::StatusOr<FusedConvPlan*> plan = PlanFor(KeyOf(args), call);
  if (!plan.ok()) return plan.status();
  // Runs even after the timing runs wrote y: its error is this call's.
  return (*plan)->Execute(call);
}

}  // namespace coalesce
