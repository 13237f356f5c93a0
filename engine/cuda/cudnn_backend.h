// The small layer over cuDNN's backend (graph) API (cudnnBackend*, loaded
// through cudnn_library.h) that CudnnGraphConv (cudnn_graph_conv.h) builds
// on: it knows descriptors, attributes, engine configurations and plans,
// and nothing of convolutions.
//
//   BackendDesc          the owner of one backend descriptor (LibHandle);
//   BackendDescBuilder   creates one, sets its attributes, finalizes it;
//   BackendGetOne        reads one attribute value;
//   MakeBackendTensor, MakePointwiseOp, MakeOperationGraph
//                        the descriptors a graph is made of;
//   MakeKernelCache      the compiled kernels that plans of one dynamic-shape
//                        graph topology share;
//   HeuristicConfigs     the heuristics' engine configurations for a graph;
//   EngineChoice         an engine configuration as a string and back
//                        ("eng<global index>_k<knob type>=<value>..."), what
//                        the TuningCache records;
//   MakeBackendPlan, VariantPackCache, TimeBackendPlan, StreamIsCapturing
//                        finalize, feed and time an execution plan
//                        (TimeOnStream: time any enqueued run);
//   CudnnTuningIdentity  the device and library that tuning keys start with.
//
// A descriptor that refers to others (a graph to its operations, a
// configuration to its engine and knobs) does not own them: where a helper
// makes such parts it appends them to a caller's `parts` vector, which must
// outlive the descriptor. Errors are cuDNN's (CudnnStatus), naming the
// descriptor and call, with a device allocation failure as
// ResourceExhausted. No shared state: each object has one owner, so it is
// as thread-safe as the cuDNN calls themselves.
#ifndef COALESCE_ENGINE_CUDA_CUDNN_BACKEND_H_
#define COALESCE_ENGINE_CUDA_CUDNN_BACKEND_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/cuda/library_handles.h"

namespace coalesce {

using BackendDesc = LibHandle<Cudnn, cudnnBackendDescriptor_t,
                              &Cudnn::BackendDestroyDescriptor>;

// Every tensor is declared 16-byte aligned (what tensor-core engines need):
// its pointers must be.
inline constexpr int64_t kBackendAlignment = 16;

// cuDNN's error as a Status naming `call`; out of device memory is
// ResourceExhausted as well as out of host memory.
absl::Status BackendStatus(const Cudnn& dnn, cudnnStatus_t status,
                           absl::string_view call);

// One backend descriptor being made: created, its attributes set in turn
// (after a failure the rest are skipped and the first error kept), then
// finalized. `what` names it in errors and must outlive the builder.
class BackendDescBuilder {
 public:
  BackendDescBuilder(const Cudnn& dnn, cudnnBackendDescriptorType_t type,
                     const char* what);

  BackendDescBuilder& Set(cudnnBackendAttributeName_t name,
                          cudnnBackendAttributeType_t type, int64_t count,
                          const void* values);
  BackendDescBuilder& Int(cudnnBackendAttributeName_t name, int64_t value) {
    return Set(name, CUDNN_TYPE_INT64, 1, &value);
  }
  BackendDescBuilder& Ints(cudnnBackendAttributeName_t name,
                           std::initializer_list<int64_t> values) {
    return Set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()),
               values.begin());
  }
  BackendDescBuilder& Double(cudnnBackendAttributeName_t name, double value) {
    return Set(name, CUDNN_TYPE_DOUBLE, 1, &value);
  }
  BackendDescBuilder& Float(cudnnBackendAttributeName_t name, float value) {
    return Set(name, CUDNN_TYPE_FLOAT, 1, &value);
  }
  BackendDescBuilder& Type(cudnnBackendAttributeName_t name,
                           cudnnDataType_t value) {
    return Set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
  }
  BackendDescBuilder& Ref(cudnnBackendAttributeName_t name,
                          cudnnBackendDescriptor_t desc) {
    return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc);
  }

  // The descriptor, or the first error. Call once.
  absl::StatusOr<BackendDesc> Finalize();

 private:
  const Cudnn& dnn_;
  const char* what_;
  BackendDesc desc_;
  absl::Status status_;
};

// One value of a descriptor's attribute (an engine's index, a plan's
// workspace size, a knob's type or value).
template <typename T>
absl::Status BackendGetOne(const Cudnn& dnn, cudnnBackendDescriptor_t desc,
                           cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, T* value) {
  int64_t count = 0;
  return BackendStatus(
      dnn, dnn.BackendGetAttribute(desc, name, type, 1, &count, value),
      absl::StrCat("cudnnBackendGetAttribute(", static_cast<int>(name), ")"));
}

// ---------------------------------------------------------------------------
// Graphs.

// A packed 4-D tensor: dims in NCHW order (KCRS for filters), laid out
// NCHW, or NHWC (KRSC) with channels_last.
struct BackendTensor {
  int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::array<int64_t, 4> dims{};
  bool channels_last = false;
  bool is_virtual = false;  // an intermediate no variant pack points at
};
absl::StatusOr<BackendDesc> MakeBackendTensor(const Cudnn& dnn,
                                              const BackendTensor& tensor);

// One pointwise mode, computed in float32.
struct PointwiseSpec {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_IDENTITY;
  // CUDNN_POINTWISE_RELU_FWD's: below lower_clip, y = lower_clip +
  // lower_clip_slope (x - lower_clip); above upper_clip, y = upper_clip.
  double lower_clip = 0.0;
  double upper_clip = FLT_MAX;
  double lower_clip_slope = 0.0;
  // CUDNN_POINTWISE_SWISH_FWD's: x sigmoid(swish_beta x).
  double swish_beta = 1.0;
};

// The operation y = f(x) (b null) or y = x op b; its pointwise descriptor
// is appended to `parts`.
absl::StatusOr<BackendDesc> MakePointwiseOp(const Cudnn& dnn,
                                            const PointwiseSpec& spec,
                                            cudnnBackendDescriptor_t x,
                                            cudnnBackendDescriptor_t b,
                                            cudnnBackendDescriptor_t y,
                                            std::vector<BackendDesc>* parts);

// The finalized operation graph of `ops` (owned by the caller) on `handle`.
// `dynamic_shapes` marks it a dynamic-shape graph, which the plans of a
// kernel cache (MakeKernelCache) must be made from; cuDNN 9.4 or later.
absl::StatusOr<BackendDesc> MakeOperationGraph(
    const Cudnn& dnn, cudnnHandle_t handle,
    const std::vector<cudnnBackendDescriptor_t>& ops,
    bool dynamic_shapes = false);

// Whether the loaded cuDNN has kernel caches made for an operation graph
// (9.5 or later).
inline bool HasKernelCache(const Cudnn& dnn) { return dnn.version >= 90500; }

// A finalized kernel cache for the topology of `graph` (a dynamic-shape
// graph). An execution plan made with it (MakeBackendPlan) compiles its
// kernel once; plans of the same engine for graphs of the same topology at
// other shapes (another batch size) bind that kernel instead of compiling
// their own. It may outlive `graph`, and must outlive its plans.
// REQUIRES: HasKernelCache(dnn).
absl::StatusOr<BackendDesc> MakeKernelCache(const Cudnn& dnn,
                                            cudnnBackendDescriptor_t graph);

// ---------------------------------------------------------------------------
// Engine configurations.

// The heuristics' engine configurations for `graph` in `mode`, best first.
absl::StatusOr<std::vector<BackendDesc>> HeuristicConfigs(
    const Cudnn& dnn, cudnnBackendDescriptor_t graph,
    cudnnBackendHeurMode_t mode);

// An engine configuration as the tuning cache keeps it: its engine's
// global index and its knob choices.
struct EngineChoice {
  int64_t engine = 0;
  std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> knobs;
  // A note that the engine reduces in less than float32 (not in the text).
  bool reduced_precision = false;

  // "eng<index>_k<type>=<value>_k<type>=<value>...".
  std::string ToString() const;
  // The inverse of ToString; nullopt for any other text.
  static std::optional<EngineChoice> Parse(absl::string_view text);
};

// What `config` is, and its numerical notes.
absl::StatusOr<EngineChoice> EngineChoiceOf(const Cudnn& dnn,
                                            cudnnBackendDescriptor_t config);

// The engine configuration `choice` describes for `graph`; the engine and
// knob descriptors it refers to are appended to `parts`.
absl::StatusOr<BackendDesc> EngineConfigOf(const Cudnn& dnn,
                                           cudnnBackendDescriptor_t graph,
                                           const EngineChoice& choice,
                                           std::vector<BackendDesc>* parts);

// ---------------------------------------------------------------------------
// Plans.

// A finalized execution plan and the workspace it needs.
struct BackendPlan {
  BackendDesc plan;
  int64_t workspace_bytes = 0;

  bool FitsIn(size_t bytes) const {
    return workspace_bytes >= 0 &&
           static_cast<size_t>(workspace_bytes) <= bytes;
  }
};

// Finalizes the plan of `config` on `handle` (this may compile a kernel,
// or bind one `kernel_cache` holds; null: no cache).
absl::StatusOr<BackendPlan> MakeBackendPlan(
    const Cudnn& dnn, cudnnHandle_t handle, cudnnBackendDescriptor_t config,
    cudnnBackendDescriptor_t kernel_cache = nullptr);

// The variant packs of the last kMaxPacks buffer sets a plan ran with, so
// that a steady state makes no descriptor (and allocates nothing).
class VariantPackCache {
 public:
  static constexpr size_t kMaxPacks = 4;

  // Tensor i of every pack has unique id uids[i].
  VariantPackCache(const Cudnn& dnn, std::vector<int64_t> uids)
      : dnn_(dnn), uids_(std::move(uids)) {}

  // The pack pointing tensor i at data[i] (left out where data[i] is null:
  // a tensor this graph lacks), with `workspace`: a cached one, or a new
  // one replacing the oldest. Valid until the next Get.
  // REQUIRES: data.size() == the size of uids.
  absl::StatusOr<cudnnBackendDescriptor_t> Get(absl::Span<void* const> data,
                                               void* workspace);

 private:
  struct Entry {
    std::vector<void*> data;
    void* workspace;
    BackendDesc pack;
  };

  const Cudnn& dnn_;
  const std::vector<int64_t> uids_;
  std::vector<Entry> entries_;
  size_t next_ = 0;  // the entry a miss replaces once all are made
};

// Microseconds per call of `run`, which enqueues one run on `stream` and
// returns its error: one warm-up call, then `runs` calls between two CUDA
// events, waited for; the first error stops it and is returned. Also what
// CudaConv (cuda_conv.h) times its legacy algorithms with. REQUIRES:
// `stream` is not capturing.
absl::StatusOr<double> TimeOnStream(cudaStream_t stream, int runs,
                                    absl::FunctionRef<absl::Status()> run);

// TimeOnStream of `plan` with `pack` on `stream` (the stream set on
// `handle`). Every run writes the pack's outputs. REQUIRES: `stream` is
// not capturing.
absl::StatusOr<double> TimeBackendPlan(const Cudnn& dnn, cudnnHandle_t handle,
                                       cudnnBackendDescriptor_t plan,
                                       cudnnBackendDescriptor_t pack,
                                       cudaStream_t stream, int runs);

// Whether work on `stream` is being captured into a CUDA graph, where
// nothing may wait for it (so nothing can be timed); an error answers yes.
bool StreamIsCapturing(cudaStream_t stream);

// The identity of device `ordinal` with the loaded cuDNN, what measured
// choices hold for: "<cudaDeviceProp name>, sm_<major><minor>, cuDNN
// <version>" (a tab or newline in the name becomes a space). Loads cuDNN;
// FailedPrecondition without it, else the error of reading the device.
absl::StatusOr<std::string> CudnnTuningIdentity(int ordinal);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDNN_BACKEND_H_
