// The cuDNN frontend is compiled here only: every call into it is in this
// file, and every exception it may throw (it reports a missing library that
// way) ends here as a Status.
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB
#include "engine/cuda/cudnn_sdpa.h"

#include <cudnn_frontend.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_memory.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/library_search.h"
#include "engine/cuda/sdpa_layout.h"
#include "engine/device/kernel_args.h"
#include "kernels/cuda/half.h"

// The frontend's dynamic loading reads cuDNN's symbols from this handle,
// which Create sets to the library cudnn_library.h loaded.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace coalesce {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kOut, kBias };

fe::DataType_t FrontendType(DeviceFloat t) {
  return t == DeviceFloat::kBFloat16 ? fe::DataType_t::BFLOAT16
                                     : fe::DataType_t::HALF;
}

std::vector<int64_t> Vec(const std::array<int64_t, 4>& a) {
  return {a.begin(), a.end()};
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// libcudart.so.13 loaded (never closed), wherever library_search.h found
// it, and named to the frontend: by itself it would take the first of
// libcudart.so.12 and .13 its dlopen finds. Its variable is set once, before
// the first frontend call, unless the user set it (setenv then, at the
// first attention of an opt-in path, is the one write to the environment).
absl::Status LoadCudaRuntime() {
  static const absl::Status* loaded = [] {
    auto h = DlopenCudaLibrary("libcudart.so.13", "CUDA's runtime library");
    if (!h.ok()) return new absl::Status(h.status());
    const std::string path =
        LibraryPathOf(LookupSymbol(*h, "cudaRuntimeGetVersion"));
    if (!path.empty())
      setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", path.c_str(), 0);
    return new absl::Status();
  }();
  return *loaded;
}

}  // namespace

struct CudnnSdpa::Graph {
  absl::Status status;  // OK: `graph` runs this key
  std::shared_ptr<fe::graph::Graph> graph;
  CudaMemory bias;        // the converted mask, when SdpaLayout says so
  bool ran = false;       // executed once, successfully
  bool reported = false;  // an unsupported key's line was written
};

absl::StatusOr<std::unique_ptr<CudnnSdpa>> CudnnSdpa::Create() {
  auto dnn = LoadCudnn();
  if (!dnn.ok()) return dnn.status();
  if (absl::Status s = LoadCudaRuntime(); !s.ok()) return s;
  // Set once for the process (the same handle for every instance).
  static const bool told = (fe::cudnn_dlhandle = (*dnn)->library, true);
  (void)told;
  cudnnHandle_t handle = nullptr;
  if (absl::Status s =
          CudnnStatus(**dnn, (*dnn)->Create(&handle), "cudnnCreate (SDPA)");
      !s.ok())
    return s;
  return std::unique_ptr<CudnnSdpa>(new CudnnSdpa(**dnn, handle));
}

CudnnSdpa::CudnnSdpa(const Cudnn& dnn, cudnnHandle_t handle)
    : dnn_(dnn), handle_(handle) {}

CudnnSdpa::~CudnnSdpa() {
  graphs_.clear();
  dnn_.Destroy(handle_);
}

std::unique_ptr<CudnnSdpa::Graph> CudnnSdpa::Build(
    const SdpaLayout& l, float scale, size_t workspace_bytes) const {
  auto built = std::make_unique<Graph>();
  try {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(FrontendType(l.type))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    // Every tensor's type set: an unset one would be the graph's io type.
    auto tensor = [&](const char* name, int64_t uid, const SdpaTensor& t) {
      return g->tensor(fe::graph::Tensor_attributes()
                           .set_name(name)
                           .set_uid(uid)
                           .set_dim(Vec(t.dims))
                           .set_stride(Vec(t.strides))
                           .set_data_type(FrontendType(l.type)));
    };
    auto q = tensor("q", kQ, l.q);
    auto k = tensor("k", kK, l.k);
    auto v = tensor("v", kV, l.v);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attention")
                       .set_generate_stats(false)
                       .set_attn_scale(scale);
    if (l.has_bias) options.set_bias(tensor("bias", kBias, l.bias));
    auto outputs = g->sdpa(q, k, v, options);
    outputs[0]
        ->set_output(true)
        .set_dim(Vec(l.out.dims))
        .set_stride(Vec(l.out.strides))
        .set_uid(kOut)
        .set_data_type(FrontendType(l.type));
    if (auto e = g->build(handle_, {fe::HeurMode_t::A}); !e.is_good()) {
      built->status = absl::UnimplementedError(
          absl::StrCat("cuDNN SDPA: ", e.get_message()));
      return built;
    }
    int64_t needed = 0;
    if (auto e = g->get_workspace_size(needed); !e.is_good()) {
      built->status = absl::UnimplementedError(
          absl::StrCat("cuDNN SDPA workspace: ", e.get_message()));
      return built;
    }
    if (needed < 0 || static_cast<size_t>(needed) > workspace_bytes) {
      built->status = absl::UnimplementedError(
          absl::StrCat("cuDNN SDPA needs ", needed,
                       " bytes of workspace, more than ", workspace_bytes));
      return built;
    }
    built->graph = std::move(g);
  } catch (const std::exception& e) {
    built->status =
        absl::UnimplementedError(absl::StrCat("cuDNN SDPA: ", e.what()));
    return built;
  }
  if (l.convert_bias) {
    void* bias = nullptr;
    built->status = CudaStatus(
        cudaMalloc(&bias, static_cast<size_t>(l.bias_elements) * sizeof(Half)),
        "cudaMalloc (SDPA mask)");
    built->bias.reset(bias);
    if (!built->status.ok()) built->graph.reset();
  }
  return built;
}

absl::Status CudnnSdpa::Execute(Graph& g, cudaStream_t stream,
                                const AttentionArgs& a, const SdpaLayout& l,
                                void* workspace) {
  void* bias = const_cast<void*>(a.mask.data);
  if (l.convert_bias) {
    bias = g.bias.get();
    if (absl::Status s =
            CudaStatus(kernels::cuda::LaunchToHalfSaturating(
                           static_cast<const float*>(a.mask.data),
                           static_cast<uint16_t*>(bias), l.bias_elements,
                           ToKernel(l.type), stream),
                       "SDPA mask conversion kernel");
        !s.ok())
      return s;
  }
  std::unordered_map<fe::graph::Tensor_attributes::uid_t, void*> pack = {
      {kQ, const_cast<void*>(a.q.data)},
      {kK, const_cast<void*>(a.k.data)},
      {kV, const_cast<void*>(a.v.data)},
      {kOut, a.out.data}};
  if (l.has_bias) pack[kBias] = bias;
  if (absl::Status s =
          CudnnStatus(dnn_, dnn_.SetStream(handle_, stream), "cudnnSetStream");
      !s.ok())
    return s;
  try {
    if (auto e = g.graph->execute(handle_, pack, workspace); !e.is_good())
      return absl::InternalError(
          absl::StrCat("cuDNN SDPA execution: ", e.get_message()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("cuDNN SDPA execution: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status CudnnSdpa::Refused(absl::Status why) {
  if (refusals_.insert(std::string(why.message())).second) {
    std::fprintf(stderr, "coalesce: cuDNN SDPA not used: %s\n",
                 std::string(why.message()).c_str());
  }
  return why;
}

absl::Status CudnnSdpa::Run(cudaStream_t stream, const AttentionArgs& a,
                            void* workspace, size_t workspace_bytes) {
  absl::StatusOr<SdpaLayout> layout = SdpaLayoutOf(a);
  if (!layout.ok()) return Refused(layout.status());
  // A converted mask is read from the graph's own array.
  const void* mask = layout->convert_bias ? nullptr : a.mask.data;
  for (const void* p : {a.q.data, a.k.data, a.v.data,
                        static_cast<const void*>(a.out.data), mask}) {
    if (!Aligned(p)) {
      return Refused(absl::UnimplementedError(
          "cuDNN SDPA: an operand not 16-byte aligned"));
    }
  }
  const std::string key = SdpaKey(*layout, a.scale);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (absl::Status s = CudaStatus(cudaStreamIsCapturing(stream, &capture),
                                    "cudaStreamIsCapturing");
        !s.ok())
      return s;
    if (capture != cudaStreamCaptureStatusNone) {
      return absl::UnimplementedError(
          "cuDNN SDPA: a new graph is not built while capturing");
    }
    it = graphs_.emplace(key, Build(*layout, a.scale, workspace_bytes)).first;
  }
  Graph& g = *it->second;
  if (g.status.ok()) {
    absl::Status s = Execute(g, stream, a, *layout, workspace);
    if (s.ok() && !g.ran) {
      g.ran = true;
      std::fprintf(stderr, "coalesce: cuDNN SDPA runs %s\n", key.c_str());
    }
    if (g.ran) return s;
    // A sticky fault from earlier work says nothing about this key.
    if (IsStickyCudaError(cudaPeekAtLastError())) return s;
    // A first execution that fails: the key is unsupported.
    g.status = absl::UnimplementedError(s.message());
    g.graph.reset();
  }
  if (!g.reported) {
    g.reported = true;
    std::fprintf(stderr, "coalesce: cuDNN SDPA not used for %s: %s\n",
                 key.c_str(), std::string(g.status.message()).c_str());
  }
  return g.status;
}

}  // namespace coalesce
