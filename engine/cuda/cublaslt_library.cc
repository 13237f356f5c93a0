#include "engine/cuda/cublaslt_library.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/cuda/library_search.h"

namespace coalesce {
namespace {

const std::string& SoName() {
  static const std::string* name =
      new std::string(absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR));
  return *name;
}

absl::StatusOr<CublasLt> Load() {
  auto opened = DlopenCudaLibrary(SoName(), "CUDA's cuBLAS");
  if (!opened.ok()) return opened.status();
  void* const handle = *opened;
  CublasLt lt;
  std::string missing;
  const bool ok =
      ResolveSymbol(handle, "cublasLtCreate", &lt.Create, &missing) &&
      ResolveSymbol(handle, "cublasLtDestroy", &lt.Destroy, &missing) &&
      ResolveSymbol(handle, "cublasLtGetStatusName", &lt.GetStatusName,
                    &missing) &&
      ResolveSymbol(handle, "cublasLtMatmul", &lt.Matmul, &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulDescCreate", &lt.MatmulDescCreate,
                    &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulDescDestroy", &lt.MatmulDescDestroy,
                    &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulDescSetAttribute",
                    &lt.MatmulDescSetAttribute, &missing) &&
      ResolveSymbol(handle, "cublasLtMatrixLayoutCreate",
                    &lt.MatrixLayoutCreate, &missing) &&
      ResolveSymbol(handle, "cublasLtMatrixLayoutDestroy",
                    &lt.MatrixLayoutDestroy, &missing) &&
      ResolveSymbol(handle, "cublasLtMatrixLayoutSetAttribute",
                    &lt.MatrixLayoutSetAttribute, &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulPreferenceCreate",
                    &lt.MatmulPreferenceCreate, &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulPreferenceDestroy",
                    &lt.MatmulPreferenceDestroy, &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulPreferenceSetAttribute",
                    &lt.MatmulPreferenceSetAttribute, &missing) &&
      ResolveSymbol(handle, "cublasLtMatmulAlgoGetHeuristic",
                    &lt.MatmulAlgoGetHeuristic, &missing);
  lt.path = LibraryPathOf(reinterpret_cast<void*>(lt.Create));
  if (lt.path.empty()) lt.path = SoName();
  if (!ok) {
    return absl::FailedPreconditionError(
        absl::StrCat(lt.path, " lacks ", missing, ": too old a cuBLAS"));
  }
  auto version =
      reinterpret_cast<size_t (*)()>(dlsym(handle, "cublasLtGetVersion"));
  lt.version = version != nullptr ? version() : 0;
  return lt;
}

}  // namespace

absl::StatusOr<const CublasLt*> LoadCublasLt() {
  static const auto* loaded = new absl::StatusOr<CublasLt>(Load());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::Status CublasStatus(const CublasLt& lt, cublasStatus_t status,
                          absl::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string text = absl::StrCat(call, ": ", lt.GetStatusName(status));
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(text);
  }
  return absl::InternalError(text);
}

}  // namespace coalesce
