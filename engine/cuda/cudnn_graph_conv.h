// CudnnGraphConv: a 16-bit convolution and its whole epilogue,
// y = act(conv(x, w) + bias + z) (ConvArgs, engine/device/device_kernels.h),
// as ONE cuDNN operation graph on the backend API (cudnn_backend.h), so the
// epilogue runs inside the convolution's kernel instead of as kernels of its
// own. docs/device-pipeline.md ("Fused convolutions") says why and how.
//
// Supported: x and w float16 or bfloat16, y (and z) of x's type or
// float32, bias float32,
// channels_last (NHWC, w KRSC), or NCHW without an epilogue (with one only
// under Options::nchw_epilogues: graph_conv_scope.h), any groups, and the
// activations identity, Relu, LeakyRelu, Clip, Sigmoid, Tanh, GeluErf, GeluTanh
// and Silu. Anything else, a pointer not 16-byte aligned, or a graph no cuDNN
// engine runs within the workspace answers Unimplemented: the caller then
// runs the convolution its legacy way, which writes all of y.
//
// Choosing an engine: at the first Run of a shape (everything that decides
// the graph), the engine configuration recorded in the TuningCache for it is
// rebuilt; failing that, the one tuned for the same convolution at the
// nearest larger batch size (engine/device/batch_sibling_choices.h: warm-up
// tunes the largest graph bucket first, and the smaller ones then build one
// plan each and run it once, not recorded; not while capturing); failing
// that, the heuristics' candidates
// (modes A, then FALLBACK) that finalize and fit the workspace are each
// timed on this call's buffers and the fastest is kept and recorded.
// Timing runs write y (1 warm-up and 3 runs per candidate, each the same
// result); the chosen plan then runs once more, and its error, if any, is
// Run's: a y written by the timing runs is not a success. On a capturing
// stream nothing is timed or recorded: the first candidate is kept. The
// plan, and the result of an unsupported shape, are kept for the life of
// the object.
//
// Kernel caches (Options::kernel_cache): every plan finalized, timed
// candidates' included, may compile its kernel at run time, once per batch
// size of each convolution. With the option, graphs are built as cuDNN's
// dynamic-shape graphs and the plans of one convolution, at every batch
// size, are made with one kernel cache (built from its first graph): a
// kernel compiled for one size is bound, not compiled again, at the others.
// A cache that cannot be made leaves that plan without one.
//
// Tuning keys: "<CudnnTuningIdentity> | cudnn-graph-conv/1 <key>"
// (cudnn_backend.h), the identity computed once by Create, so that one cache
// (and file) holds the winners of several GPUs and cuDNN versions apart.
//
// Owns its cuDNN handle and every backend descriptor (RAII owners); shares
// the TuningCache. Not thread-safe: one per CudaKernels, called from one
// thread at a time with its device current. Errors: Unimplemented as above;
// ResourceExhausted when cuDNN runs out of memory while building; a failed
// execution as CudnnStatus says.
#ifndef COALESCE_ENGINE_CUDA_CUDNN_GRAPH_CONV_H_
#define COALESCE_ENGINE_CUDA_CUDNN_GRAPH_CONV_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/conv_shape_key.h"
#include "engine/cuda/cudnn_backend.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/cuda/library_handles.h"
#include "engine/device/batch_sibling_choices.h"
#include "engine/device/device_kernels.h"
#include "engine/device/tuning_cache.h"

namespace coalesce {

// Everything that decides a fused convolution's graph.
struct GraphConvKey {
  ConvShapeKey shape;
  bool channels_last;
  DeviceFloat x_type;  // x's and w's: float16 or bfloat16
  DeviceFloat y_type;
  bool has_bias, has_z;
  DeviceFloat z_type;
  DeviceActivation activation;
  float alpha, beta;  // the activation's parameters, where it has them
  auto Tie() const {
    return std::tie(shape, channels_last, x_type, y_type, has_bias, has_z,
                    z_type, activation, alpha, beta);
  }
  bool operator<(const GraphConvKey& o) const { return Tie() < o.Tie(); }
};

class FusedConvPlan;
struct GraphConvCall;

class CudnnGraphConv {
 public:
  struct Options {
    // Where chosen engines are looked up and recorded; null: choose once
    // per shape and object, keep nothing.
    std::shared_ptr<TuningCache> tuning_cache;
    // The most candidates timed at a shape's first Run (each costs a
    // finalize, which may compile a kernel, and 4 runs).
    int max_timed_candidates = 8;
    // Whether a new batch size of a tuned convolution adopts the nearest
    // tuned size's engine (above) instead of timing its own candidates.
    bool adopt_batch_siblings = true;
    // Whether the graphs are dynamic-shape graphs whose plans share one
    // cuDNN kernel cache per convolution (every batch size of it), so that
    // an engine's runtime-compiled kernel is compiled once per convolution
    // instead of once per batch size (cuDNN 9.5 or later; else ignored).
    // Off by default until a GPU run has measured it
    // (COALESCE_CUDNN_KERNEL_CACHE=1, cuda_kernels.cc).
    bool kernel_cache = false;
    // Whether NCHW convolutions with an epilogue take the graph too; off,
    // they answer Unimplemented (graph_conv_scope.h says why).
    bool nchw_epilogues = false;
  };

  // Loads cuDNN (once per process), reads the identity of device
  // `device_ordinal` for the tuning keys and creates a handle on the
  // current device. REQUIRES: `device_ordinal` is the current device.
  // FailedPrecondition without cuDNN 9; the CUDA error of reading the
  // device's properties.
  static absl::StatusOr<std::unique_ptr<CudnnGraphConv>> Create(
      int device_ordinal, const Options& options);
  ~CudnnGraphConv();
  CudnnGraphConv(const CudnnGraphConv&) = delete;
  CudnnGraphConv& operator=(const CudnnGraphConv&) = delete;

  // Enqueues y = act(conv(x, w) + bias + z) on `stream`, with `workspace`
  // (device memory of `workspace_bytes`, 16-byte aligned) for cuDNN.
  // Unimplemented where the contract above says (the legacy path is to run;
  // a shape's first call may have timed candidates that wrote y, and an
  // unsupported shape's later calls enqueue nothing).
  absl::Status Run(cudaStream_t stream, const ConvArgs& args, void* workspace,
                   size_t workspace_bytes);

 private:
  CudnnGraphConv(const Cudnn& dnn, const Options& options,
                 std::string key_prefix);

  // The plan of `key`: made (and its engine chosen) at the first call.
  absl::StatusOr<FusedConvPlan*> PlanFor(const GraphConvKey& key,
                                         const GraphConvCall& call);

  const Cudnn& dnn_;
  const Options options_;
  const std::string key_prefix_;  // "<identity> | ", before every tuning key
  DnnHandle handle_;
  // Per convolution (its key without the batch size), with
  // Options::kernel_cache: declared before plans_, whose execution plans
  // use them, so that they are destroyed after them.
  std::map<std::string, BackendDesc> kernel_caches_;
  std::map<GraphConvKey, std::unique_ptr<FusedConvPlan>> plans_;
  BatchSiblingChoices siblings_;  // the engines tuned per convolution
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDNN_GRAPH_CONV_H_
