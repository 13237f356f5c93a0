#include "engine/cuda/cudnn_library.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/cuda/library_search.h"

namespace coalesce {
namespace {

absl::StatusOr<Cudnn> Load() {
  const std::string soname = absl::StrCat("libcudnn.so.", CUDNN_MAJOR);
  auto opened = DlopenCudaLibrary(soname, "cuDNN 9");
  if (!opened.ok()) return opened.status();
  void* const h = *opened;
  Cudnn d;
  d.library = h;
  std::string missing;
  const bool ok =
      ResolveSymbol(h, "cudnnCreate", &d.Create, &missing) &&
      ResolveSymbol(h, "cudnnDestroy", &d.Destroy, &missing) &&
      ResolveSymbol(h, "cudnnSetStream", &d.SetStream, &missing) &&
      ResolveSymbol(h, "cudnnGetErrorString", &d.GetErrorString, &missing) &&
      ResolveSymbol(h, "cudnnCreateTensorDescriptor", &d.CreateTensorDescriptor,
                    &missing) &&
      ResolveSymbol(h, "cudnnSetTensor4dDescriptor", &d.SetTensor4dDescriptor,
                    &missing) &&
      ResolveSymbol(h, "cudnnDestroyTensorDescriptor",
                    &d.DestroyTensorDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnCreateFilterDescriptor", &d.CreateFilterDescriptor,
                    &missing) &&
      ResolveSymbol(h, "cudnnSetFilter4dDescriptor", &d.SetFilter4dDescriptor,
                    &missing) &&
      ResolveSymbol(h, "cudnnDestroyFilterDescriptor",
                    &d.DestroyFilterDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnCreateConvolutionDescriptor",
                    &d.CreateConvolutionDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnSetConvolution2dDescriptor",
                    &d.SetConvolution2dDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnSetConvolutionGroupCount",
                    &d.SetConvolutionGroupCount, &missing) &&
      ResolveSymbol(h, "cudnnSetConvolutionMathType", &d.SetConvolutionMathType,
                    &missing) &&
      ResolveSymbol(h, "cudnnDestroyConvolutionDescriptor",
                    &d.DestroyConvolutionDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnGetConvolutionForwardAlgorithm_v7",
                    &d.GetConvolutionForwardAlgorithm, &missing) &&
      ResolveSymbol(h, "cudnnGetConvolutionForwardWorkspaceSize",
                    &d.GetConvolutionForwardWorkspaceSize, &missing) &&
      ResolveSymbol(h, "cudnnConvolutionForward", &d.ConvolutionForward,
                    &missing) &&
      ResolveSymbol(h, "cudnnCreateActivationDescriptor",
                    &d.CreateActivationDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnSetActivationDescriptor",
                    &d.SetActivationDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnDestroyActivationDescriptor",
                    &d.DestroyActivationDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnConvolutionBiasActivationForward",
                    &d.ConvolutionBiasActivationForward, &missing) &&
      ResolveSymbol(h, "cudnnBackendCreateDescriptor",
                    &d.BackendCreateDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnBackendDestroyDescriptor",
                    &d.BackendDestroyDescriptor, &missing) &&
      ResolveSymbol(h, "cudnnBackendSetAttribute", &d.BackendSetAttribute,
                    &missing) &&
      ResolveSymbol(h, "cudnnBackendGetAttribute", &d.BackendGetAttribute,
                    &missing) &&
      ResolveSymbol(h, "cudnnBackendFinalize", &d.BackendFinalize, &missing) &&
      ResolveSymbol(h, "cudnnBackendExecute", &d.BackendExecute, &missing);
  d.path = ok ? LibraryPathOf(reinterpret_cast<void*>(d.Create)) : "";
  if (d.path.empty()) d.path = soname;
  if (!ok) {
    return absl::FailedPreconditionError(
        absl::StrCat(d.path, " lacks ", missing, ": not cuDNN 9"));
  }
  auto version = reinterpret_cast<size_t (*)()>(dlsym(h, "cudnnGetVersion"));
  d.version = version != nullptr ? version() : 0;
  return d;
}

}  // namespace

absl::StatusOr<const Cudnn*> LoadCudnn() {
  static const auto* loaded = new absl::StatusOr<Cudnn>(Load());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::Status CudnnStatus(const Cudnn& dnn, cudnnStatus_t status,
                         absl::string_view call) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(call, ": ", dnn.GetErrorString(status));
  if (status == CUDNN_STATUS_ALLOC_FAILED)
    return absl::ResourceExhaustedError(text);
  return absl::InternalError(text);
}

}  // namespace coalesce
