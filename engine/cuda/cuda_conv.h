// CudaConv: DeviceKernels::Conv2D (engine/device/device_kernels.h) on cuDNN
// 9's legacy API (cudnn_library.h), for CudaKernels (cuda_kernels_impl.h).
// NCHW, or NHWC with KRSC filters (ConvArgs::channels_last). FP32 with FMA
// math (no TF32 unless allowed), or float16 x and w with float32
// accumulation on tensor cores. An NCHW float32 residual convolution with
// a bias and Relu or no activation (ResNet's) runs as one
// cudnnConvolutionBiasActivationForward; any other runs alone, writing y
// (float16 into y_scratch when y is float32), followed by one epilogue
// kernel for the bias, residual, activation and y's storage
// (kernels/cuda/pool.h: LaunchChannelAffine).
//
// Choosing an algorithm: at the first Run of a ConvKey, its descriptors are
// made and the candidates are the algorithms (with their math types) of
// cudnnGetConvolutionForwardAlgorithm_v7 that the rules allow (cuda_conv.cc:
// the fused call without an activation, FMA for exact FP32, no conversion of
// float32 data) and whose real workspace fits. The one recorded in the
// TuningCache for the key is taken if it is still a candidate; failing that,
// the candidates (at most Options::max_timed_candidates) are each timed on
// this call's buffers, with the call Run makes (1 warm-up and 3 timed runs,
// writing y or y_scratch), and the fastest is kept and recorded. A
// candidate that fails is skipped; when all fail, the last error is Run's.
// On a capturing stream nothing is timed or recorded: the first candidate
// is kept. The choice is kept for the life of the object; the chosen
// algorithm then runs once more: that run is the call's.
//
// Tuning keys: "<CudnnTuningIdentity> | cudnn-conv/1 x=<f32|f16> <ConvShapeKey>
// <nchw|nhwc> fused=<none|identity|relu> tf32=<0|1>" (cudnn_backend.h,
// conv_shape_key.h); choices "algo<cudnnConvolutionFwdAlgo_t>_math<
// cudnnMathType_t>", e.g. "algo1_math0".
//
// Owns its cuDNN handle and the prepared descriptors (RAII owners,
// library_handles.h); shares the TuningCache; the caller owns the
// workspace. Not thread-safe: one per CudaKernels, called from one thread
// at a time, with its device current. Errors: InvalidArgument for operands
// ConvArgs does not allow (CheckConvOperands), cuDNN's (CudnnStatus, naming
// the algorithm and workspace at run time), FailedPrecondition when cuDNN
// cannot be loaded, Internal when no algorithm fits, the CUDA errors of
// timing and of the epilogue's launch. The checks, the descriptors and the
// candidate search enqueue nothing, so their errors leave the stream as it
// was; a key's first call may have enqueued timing runs (writing y or
// y_scratch) before a later error.
#ifndef COALESCE_ENGINE_CUDA_CUDA_CONV_H_
#define COALESCE_ENGINE_CUDA_CUDA_CONV_H_

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/conv_shape_key.h"
#include "engine/cuda/cudnn_library.h"
#include "engine/cuda/library_handles.h"
#include "engine/device/device_kernels.h"
#include "engine/device/tuning_cache.h"

namespace coalesce {

// Everything that decides a convolution's descriptors and algorithm.
struct ConvKey {
  ConvShapeKey shape;
  DeviceFloat type;    // x's and w's, and so the convolution's result
  bool channels_last;  // NHWC x and y, KRSC w
  // cudnnConvolutionBiasActivationForward's activation, or -1 where the
  // convolution runs alone (see cuda_conv.cc). y's and z's storage matter
  // only here (the fused call takes float32 y and z): cuDNN always writes
  // x's type, into y or y_scratch, and the epilogue kernel reads any.
  int fused;
  bool tf32;  // float32 data may use TF32 tensor cores (CudaConv's option)
  bool half() const { return type != DeviceFloat::kFloat; }
  auto Tie() const { return std::tie(shape, type, channels_last, fused, tf32); }
  bool operator<(const ConvKey& o) const { return Tie() < o.Tie(); }
};

// OK when args' operands are ones ConvArgs allows: x and w both float32
// with a float32 y, or both float16 with a float16 y or a y_scratch; z of
// either type and not y. Else InvalidArgument naming what is wrong.
absl::Status CheckConvOperands(const ConvArgs& args);

class PreparedConv;

class CudaConv {
 public:
  struct Options {
    // Float32 data may use TF32 tensor cores; else FMA math only.
    bool tf32 = false;
    // The size of the workspace every Run passes.
    size_t workspace_bytes = 0;
    // Where chosen algorithms are looked up and recorded; null: choose once
    // per key and object, keep nothing.
    std::shared_ptr<TuningCache> tuning_cache;
    // The most candidates timed at a key's first Run.
    int max_timed_candidates = 8;
  };

  // Loads cuDNN (once per process), reads the identity of device
  // `device_ordinal` for the tuning keys and creates a handle on the
  // current device. REQUIRES: `device_ordinal` is the current device.
  // FailedPrecondition without cuDNN 9; the CUDA error of reading the
  // device's properties; cuDNN's error of making the handle.
  static absl::StatusOr<std::unique_ptr<CudaConv>> Create(
      int device_ordinal, const Options& options);
  ~CudaConv();
  CudaConv(const CudaConv&) = delete;
  CudaConv& operator=(const CudaConv&) = delete;

  // Enqueues args' whole Conv2D on `stream`: the convolution (at a key's
  // first call, after choosing its algorithm as the top of this file says),
  // then the epilogue kernel unless cuDNN fused it or there is nothing left
  // to do (the convolution wrote y, and there is no bias, z or activation).
  // Checks CheckConvOperands first. `workspace` is device memory of
  // Options::workspace_bytes.
  absl::Status Run(const ConvArgs& args, void* workspace, cudaStream_t stream);

 private:
  CudaConv(const Cudnn& dnn, const Options& options, std::string key_prefix);

  const Cudnn& dnn_;
  const Options options_;
  const std::string key_prefix_;  // "<identity> | ", before every tuning key
  DnnHandle handle_;
  std::map<ConvKey, std::unique_ptr<PreparedConv>> prepared_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_CONV_H_
