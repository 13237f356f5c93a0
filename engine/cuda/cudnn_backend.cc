// The backend-API helpers of cudnn_backend.h.
#include "engine/cuda/cudnn_backend.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/cuda/cuda_status.h"

namespace coalesce {
namespace {

// The handle attributes of the operation graph and the execution plan are
// deprecated since cuDNN 9.8 (where they are optional) but required before
// it: they are set for any cuDNN 9 the plugin may load.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle =
    CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle =
    CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

// Room for every knob of a configuration (cuDNN 9.19 has 44 knob types).
constexpr int64_t kMaxKnobs = 64;

// `count` fresh descriptors of `type`, for a GetAttribute to fill in.
absl::StatusOr<std::vector<BackendDesc>> CreateDescriptors(
    const Cudnn& dnn, cudnnBackendDescriptorType_t type, int64_t count) {
  std::vector<BackendDesc> descs;
  descs.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    descs.emplace_back(dnn);
    absl::Status s = BackendStatus(
        dnn, dnn.BackendCreateDescriptor(type, descs.back().receive()),
        "cudnnBackendCreateDescriptor");
    if (!s.ok()) return s;
  }
  return descs;
}

std::vector<cudnnBackendDescriptor_t> RawOf(
    const std::vector<BackendDesc>& descs) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(descs.size());
  for (const BackendDesc& d : descs) raw.push_back(d.get());
  return raw;
}

// The knob choices of `config`.
absl::Status ReadKnobs(const Cudnn& dnn, cudnnBackendDescriptor_t config,
                       EngineChoice* choice) {
  auto knobs =
      CreateDescriptors(dnn, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, kMaxKnobs);
  if (!knobs.ok()) return knobs.status();
  std::vector<cudnnBackendDescriptor_t> raw = RawOf(*knobs);
  int64_t count = 0;
  absl::Status s = BackendStatus(
      dnn,
      dnn.BackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs, &count,
                              raw.data()),
      "engine configuration: knob choices");
  for (int64_t i = 0; s.ok() && i < std::min(count, kMaxKnobs); ++i) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    int64_t value = 0;
    s = BackendGetOne(dnn, raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                      CUDNN_TYPE_KNOB_TYPE, &type);
    if (s.ok()) {
      s = BackendGetOne(dnn, raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                        CUDNN_TYPE_INT64, &value);
    }
    if (s.ok()) choice->knobs.emplace_back(type, value);
  }
  return s;
}

// Whether `engine`'s numerical notes say it reduces in less than float32.
absl::StatusOr<bool> ReducesInReducedPrecision(
    const Cudnn& dnn, cudnnBackendDescriptor_t engine) {
  std::array<cudnnBackendNumericalNote_t, 32> notes{};
  int64_t count = 0;
  absl::Status s = BackendStatus(
      dnn,
      dnn.BackendGetAttribute(
          engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
          static_cast<int64_t>(notes.size()), &count, notes.data()),
      "engine: numerical notes");
  if (!s.ok()) return s;
  for (int64_t i = 0; i < std::min<int64_t>(count, notes.size()); ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) {
      return true;
    }
  }
  return false;
}

// Packed strides of `dims` (NCHW order) in NCHW, or NHWC.
std::array<int64_t, 4> StridesOf(const std::array<int64_t, 4>& dims,
                                 bool channels_last) {
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  if (channels_last) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

struct EventDeleter {
  void operator()(CUevent_st* event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<CUevent_st, EventDeleter>;

absl::StatusOr<Event> NewEvent() {
  cudaEvent_t event = nullptr;
  absl::Status s = CudaStatus(cudaEventCreate(&event), "cudaEventCreate");
  if (!s.ok()) return s;
  return Event(event);
}

}  // namespace

absl::Status BackendStatus(const Cudnn& dnn, cudnnStatus_t status,
                           absl::string_view call) {
  if (status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat(call, ": ", dnn.GetErrorString(status)));
  }
  return CudnnStatus(dnn, status, call);
}

BackendDescBuilder::BackendDescBuilder(const Cudnn& dnn,
                                       cudnnBackendDescriptorType_t type,
                                       const char* what)
    : dnn_(dnn), what_(what), desc_(dnn) {
  status_ =
      BackendStatus(dnn, dnn.BackendCreateDescriptor(type, desc_.receive()),
                    absl::StrCat(what, ": cudnnBackendCreateDescriptor"));
}

BackendDescBuilder& BackendDescBuilder::Set(cudnnBackendAttributeName_t name,
                                            cudnnBackendAttributeType_t type,
                                            int64_t count, const void* values) {
  if (!status_.ok()) return *this;
  const cudnnStatus_t status =
      dnn_.BackendSetAttribute(desc_.get(), name, type, count, values);
  if (status != CUDNN_STATUS_SUCCESS) {  // named on failure only
    status_ = BackendStatus(dnn_, status,
                            absl::StrCat(what_, ": cudnnBackendSetAttribute(",
                                         static_cast<int>(name), ")"));
  }
  return *this;
}

absl::StatusOr<BackendDesc> BackendDescBuilder::Finalize() {
  if (status_.ok()) {
    status_ = BackendStatus(dnn_, dnn_.BackendFinalize(desc_.get()),
                            absl::StrCat(what_, ": cudnnBackendFinalize"));
  }
  if (!status_.ok()) return status_;
  return std::move(desc_);
}

absl::StatusOr<BackendDesc> MakeBackendTensor(const Cudnn& dnn,
                                              const BackendTensor& t) {
  const std::array<int64_t, 4> strides = StridesOf(t.dims, t.channels_last);
  return BackendDescBuilder(dnn, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor")
      .Type(CUDNN_ATTR_TENSOR_DATA_TYPE, t.type)
      .Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t.dims.data())
      .Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data())
      .Int(CUDNN_ATTR_TENSOR_UNIQUE_ID, t.uid)
      .Int(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kBackendAlignment)
      .Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &t.is_virtual)
      .Finalize();
}

absl::StatusOr<BackendDesc> MakePointwiseOp(const Cudnn& dnn,
                                            const PointwiseSpec& spec,
                                            cudnnBackendDescriptor_t x,
                                            cudnnBackendDescriptor_t b,
                                            cudnnBackendDescriptor_t y,
                                            std::vector<BackendDesc>* parts) {
  BackendDescBuilder pw(dnn, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
  pw.Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &spec.mode)
      .Type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  if (spec.mode == CUDNN_POINTWISE_RELU_FWD) {
    pw.Double(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, spec.lower_clip)
        .Double(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, spec.upper_clip)
        .Double(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE,
                spec.lower_clip_slope);
  } else if (spec.mode == CUDNN_POINTWISE_SWISH_FWD) {
    pw.Double(CUDNN_ATTR_POINTWISE_SWISH_BETA, spec.swish_beta);
  }
  auto desc = pw.Finalize();
  if (!desc.ok()) return desc.status();
  BackendDescBuilder op(dnn, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                        "pointwise operation");
  op.Ref(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc->get())
      .Ref(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b != nullptr) op.Ref(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  op.Ref(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  parts->push_back(*std::move(desc));
  return op.Finalize();
}

absl::StatusOr<BackendDesc> MakeOperationGraph(
    const Cudnn& dnn, cudnnHandle_t handle,
    const std::vector<cudnnBackendDescriptor_t>& ops, bool dynamic_shapes) {
  BackendDescBuilder graph(dnn, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                           "operation graph");
  graph
      .Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
           static_cast<int64_t>(ops.size()), ops.data())
      .Set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  if (dynamic_shapes) {
    const bool enabled = true;
    graph.Set(CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
              CUDNN_TYPE_BOOLEAN, 1, &enabled);
  }
  return graph.Finalize();
}

absl::StatusOr<BackendDesc> MakeKernelCache(const Cudnn& dnn,
                                            cudnnBackendDescriptor_t graph) {
  return BackendDescBuilder(dnn, CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR,
                            "kernel cache")
      .Ref(CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH, graph)
      .Finalize();
}

absl::StatusOr<std::vector<BackendDesc>> HeuristicConfigs(
    const Cudnn& dnn, cudnnBackendDescriptor_t graph,
    cudnnBackendHeurMode_t mode) {
  auto heur =
      BackendDescBuilder(dnn, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                         "engine heuristics")
          .Ref(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
          .Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
          .Finalize();
  if (!heur.ok()) return heur.status();
  int64_t count = 0;
  absl::Status s =
      BackendStatus(dnn,
                    dnn.BackendGetAttribute(
                        heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                    "engine heuristics: result count");
  if (!s.ok()) return s;
  if (count <= 0) return std::vector<BackendDesc>();
  auto configs =
      CreateDescriptors(dnn, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count);
  if (!configs.ok()) return configs.status();
  std::vector<cudnnBackendDescriptor_t> raw = RawOf(*configs);
  int64_t returned = 0;
  s = BackendStatus(
      dnn,
      dnn.BackendGetAttribute(heur->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                              raw.data()),
      "engine heuristics: results");
  if (!s.ok()) return s;
  configs->erase(configs->begin() + std::clamp<int64_t>(returned, 0, count),
                 configs->end());
  return configs;
}

std::string EngineChoice::ToString() const {
  std::string s = absl::StrCat("eng", engine);
  for (const auto& [type, value] : knobs) {
    absl::StrAppend(&s, "_k", static_cast<int>(type), "=", value);
  }
  return s;
}

std::optional<EngineChoice> EngineChoice::Parse(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '_');
  EngineChoice choice;
  if (!absl::ConsumePrefix(&parts[0], "eng") ||
      !absl::SimpleAtoi(parts[0], &choice.engine)) {
    return std::nullopt;
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    int type = 0;
    int64_t value = 0;
    if (!absl::ConsumePrefix(&kv.first, "k") ||
        !absl::SimpleAtoi(kv.first, &type) ||
        !absl::SimpleAtoi(kv.second, &value)) {
      return std::nullopt;
    }
    choice.knobs.emplace_back(static_cast<cudnnBackendKnobType_t>(type), value);
  }
  return choice;
}

absl::StatusOr<EngineChoice> EngineChoiceOf(const Cudnn& dnn,
                                            cudnnBackendDescriptor_t config) {
  auto engine = CreateDescriptors(dnn, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (!engine.ok()) return engine.status();
  cudnnBackendDescriptor_t raw = (*engine)[0].get();
  int64_t count = 0;
  absl::Status s = BackendStatus(
      dnn,
      dnn.BackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw),
      "engine configuration: engine");
  EngineChoice choice;
  if (s.ok()) {
    s = BackendGetOne(dnn, raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                      CUDNN_TYPE_INT64, &choice.engine);
  }
  if (!s.ok()) return s;
  absl::StatusOr<bool> reduced = ReducesInReducedPrecision(dnn, raw);
  if (!reduced.ok()) return reduced.status();
  choice.reduced_precision = *reduced;
  if (absl::Status k = ReadKnobs(dnn, config, &choice); !k.ok()) return k;
  return choice;
}

absl::StatusOr<BackendDesc> EngineConfigOf(const Cudnn& dnn,
                                           cudnnBackendDescriptor_t graph,
                                           const EngineChoice& choice,
                                           std::vector<BackendDesc>* parts) {
  auto engine =
      BackendDescBuilder(dnn, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine")
          .Ref(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph)
          .Int(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, choice.engine)
          .Finalize();
  if (!engine.ok()) return engine.status();
  std::vector<cudnnBackendDescriptor_t> knobs;
  for (const auto& [type, value] : choice.knobs) {
    auto knob =
        BackendDescBuilder(dnn, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, "knob")
            .Set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                 &type)
            .Int(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, value)
            .Finalize();
    if (!knob.ok()) return knob.status();
    knobs.push_back(knob->get());
    parts->push_back(*std::move(knob));
  }
  BackendDescBuilder config(dnn, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                            "engine configuration");
  config.Ref(CUDNN_ATTR_ENGINECFG_ENGINE, engine->get());
  if (!knobs.empty()) {
    config.Set(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               static_cast<int64_t>(knobs.size()), knobs.data());
  }
  parts->push_back(*std::move(engine));
  return config.Finalize();
}

absl::StatusOr<BackendPlan> MakeBackendPlan(
    const Cudnn& dnn, cudnnHandle_t handle, cudnnBackendDescriptor_t config,
    cudnnBackendDescriptor_t kernel_cache) {
  BackendDescBuilder builder(dnn, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                             "execution plan");
  builder.Set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle)
      .Ref(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  if (kernel_cache != nullptr) {
    builder.Ref(CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE, kernel_cache);
  }
  auto plan = builder.Finalize();
  if (!plan.ok()) return plan.status();
  int64_t workspace = 0;
  absl::Status s =
      BackendGetOne(dnn, plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                    CUDNN_TYPE_INT64, &workspace);
  if (!s.ok()) return s;
  return BackendPlan{*std::move(plan), workspace};
}

absl::StatusOr<cudnnBackendDescriptor_t> VariantPackCache::Get(
    absl::Span<void* const> data, void* workspace) {
  for (const Entry& entry : entries_) {
    if (entry.workspace == workspace && absl::MakeConstSpan(entry.data) == data)
      return entry.pack.get();
  }
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == nullptr) continue;
    uids.push_back(uids_[i]);
    pointers.push_back(data[i]);
  }
  auto pack =
      BackendDescBuilder(dnn_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                         "variant pack")
          .Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
               static_cast<int64_t>(uids.size()), uids.data())
          .Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
               static_cast<int64_t>(pointers.size()), pointers.data())
          .Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
               &workspace)
          .Finalize();
  if (!pack.ok()) return pack.status();
  Entry entry{std::vector<void*>(data.begin(), data.end()), workspace,
              *std::move(pack)};
  if (entries_.size() < kMaxPacks) {
    entries_.push_back(std::move(entry));
    return entries_.back().pack.get();
  }
  Entry& replaced = entries_[next_];  // round robin
  next_ = (next_ + 1) % kMaxPacks;
  replaced = std::move(entry);
  return replaced.pack.get();
}

absl::StatusOr<double> TimeOnStream(cudaStream_t stream, int runs,
                                    absl::FunctionRef<absl::Status()> run) {
  auto start = NewEvent();
  if (!start.ok()) return start.status();
  auto stop = NewEvent();
  if (!stop.ok()) return stop.status();
  absl::Status s = run();  // the warm-up
  if (s.ok()) s = CudaStatus(cudaEventRecord(start->get(), stream), "record");
  for (int i = 0; s.ok() && i < runs; ++i) s = run();
  if (s.ok()) s = CudaStatus(cudaEventRecord(stop->get(), stream), "record");
  if (s.ok()) s = CudaStatus(cudaEventSynchronize(stop->get()), "synchronize");
  float milliseconds = 0;
  if (s.ok()) {
    s = CudaStatus(
        cudaEventElapsedTime(&milliseconds, start->get(), stop->get()),
        "cudaEventElapsedTime");
  }
  if (!s.ok()) return s;
  return 1000.0 * milliseconds / std::max(runs, 1);
}

absl::StatusOr<double> TimeBackendPlan(const Cudnn& dnn, cudnnHandle_t handle,
                                       cudnnBackendDescriptor_t plan,
                                       cudnnBackendDescriptor_t pack,
                                       cudaStream_t stream, int runs) {
  return TimeOnStream(stream, runs, [&] {
    return BackendStatus(dnn, dnn.BackendExecute(handle, plan, pack),
                         "cudnnBackendExecute");
  });
}

bool StreamIsCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  absl::Status s = CudaStatus(cudaStreamIsCapturing(stream, &status),
                              "cudaStreamIsCapturing");
  return !s.ok() || status != cudaStreamCaptureStatusNone;
}

absl::StatusOr<std::string> CudnnTuningIdentity(int ordinal) {
  absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
  if (!dnn.ok()) return dnn.status();
  cudaDeviceProp prop{};
  absl::Status s = CudaStatus(cudaGetDeviceProperties(&prop, ordinal),
                              "cudaGetDeviceProperties");
  if (!s.ok()) return s;
  std::string name = prop.name;
  std::replace_if(
      name.begin(), name.end(),
      [](char ch) { return ch == '\t' || ch == '\n' || ch == '\r'; }, ' ');
  return absl::StrCat(name, ", sm_", prop.major, prop.minor, ", cuDNN ",
                      (*dnn)->version);
}

}  // namespace coalesce
