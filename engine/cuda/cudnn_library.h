// Cudnn: the cuDNN 9 functions the plugin uses, loaded at run time from
// libcudnn.so.<major> the first time a GPU instance needs them, searched as
// library_search.h says. Thread-safe; loaded once for the life of the
// process.
//
// Two APIs: the legacy convolution calls (cuda_conv.h: one convolution, an
// explicit algorithm per shape, and cudnnConvolutionBiasActivationForward
// for act(conv + bias + z) with Relu or no activation), and the backend
// (graph) API's descriptor functions (cudnn_graph_conv.h: a convolution and
// its whole epilogue as one operation graph, docs/device-pipeline.md ("Fused
// convolutions")).
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
  void* library = nullptr;  // the dlopen handle (the cuDNN frontend's too)

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

  // The backend (graph) API. cudnnBackendInitialize, deprecated, is not
  // needed: descriptors are made with cudnnBackendCreateDescriptor.
  decltype(&::cudnnBackendCreateDescriptor) BackendCreateDescriptor = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) BackendDestroyDescriptor = nullptr;
  decltype(&::cudnnBackendSetAttribute) BackendSetAttribute = nullptr;
  decltype(&::cudnnBackendGetAttribute) BackendGetAttribute = nullptr;
  decltype(&::cudnnBackendFinalize) BackendFinalize = nullptr;
  decltype(&::cudnnBackendExecute) BackendExecute = nullptr;
};

// FailedPrecondition listing where it looked, or naming a missing symbol.
absl::StatusOr<const Cudnn*> LoadCudnn();

// OK for CUDNN_STATUS_SUCCESS; ResourceExhausted for ALLOC_FAILED; else
// Internal naming `call` and cuDNN's text.
absl::Status CudnnStatus(const Cudnn& dnn, cudnnStatus_t status,
                         absl::string_view call);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDNN_LIBRARY_H_
