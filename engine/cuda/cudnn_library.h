// Cudnn: the cuDNN 9 functions the plugin uses (the legacy convolution API),
// loaded at run time from libcudnn.so.<major> the first time a GPU instance
// needs them, searched as library_search.h says. Thread-safe; loaded once
// for the life of the process.
//
// Why the legacy API and not the graph API: the operators here are one
// convolution each, which the legacy API states in a few calls with an
// explicit algorithm choice per shape. Its one fused call,
// cudnnConvolutionBiasActivationForward, covers what the models need fused:
// a ResNet residual, act(conv + bias + z) with Relu or no activation. Other
// epilogues run as one per-channel kernel after the convolution. The graph
// API would pay off for longer fused chains (docs/device-pipeline.md).
#ifndef COALESCE_ENGINE_CUDA_CUDNN_LIBRARY_H_
#define COALESCE_ENGINE_CUDA_CUDNN_LIBRARY_H_

#include <cudnn.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coalesce {

struct Cudnn {
  std::string path;
  size_t version = 0;

  decltype(&::cudnnCreate) Create = nullptr;
  decltype(&::cudnnDestroy) Destroy = nullptr;
  decltype(&::cudnnSetStream) SetStream = nullptr;
  decltype(&::cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) CreateTensorDescriptor = nullptr;
  decltype(&::cudnnSetTensor4dDescriptor) SetTensor4dDescriptor = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) DestroyTensorDescriptor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) CreateFilterDescriptor = nullptr;
  decltype(&::cudnnSetFilter4dDescriptor) SetFilter4dDescriptor = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) DestroyFilterDescriptor = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor =
      nullptr;
  decltype(&::cudnnSetConvolution2dDescriptor) SetConvolution2dDescriptor =
      nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) SetConvolutionGroupCount = nullptr;
  decltype(&::cudnnSetConvolutionMathType) SetConvolutionMathType = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor =
      nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7)
      GetConvolutionForwardAlgorithm = nullptr;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize)
      GetConvolutionForwardWorkspaceSize = nullptr;
  decltype(&::cudnnConvolutionForward) ConvolutionForward = nullptr;
  decltype(&::cudnnCreateActivationDescriptor) CreateActivationDescriptor =
      nullptr;
  decltype(&::cudnnSetActivationDescriptor) SetActivationDescriptor = nullptr;
  decltype(&::cudnnDestroyActivationDescriptor) DestroyActivationDescriptor =
      nullptr;
  decltype(&::cudnnConvolutionBiasActivationForward)
      ConvolutionBiasActivationForward = nullptr;
};

// FailedPrecondition listing where it looked, or naming a missing symbol.
absl::StatusOr<const Cudnn*> LoadCudnn();

// OK for CUDNN_STATUS_SUCCESS; ResourceExhausted for ALLOC_FAILED; else
// Internal naming `call` and cuDNN's text.
absl::Status CudnnStatus(const Cudnn& dnn, cudnnStatus_t status,
                         absl::string_view call);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDNN_LIBRARY_H_
