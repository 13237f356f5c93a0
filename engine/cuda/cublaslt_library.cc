#include "engine/cuda/cublaslt_library.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace coalesce {
namespace {

const std::string& SoName() {
  static const std::string* name =
      new std::string(absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR));
  return *name;
}

// Candidate files in search order (a bare name: the loader's own search).
std::vector<std::string> Candidates() {
  std::vector<std::string> files;
  if (const char* dirs = std::getenv("COALESCE_CUDA_LIBRARY_PATH")) {
    for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
      files.push_back(absl::StrCat(dir, "/", SoName()));
    }
  }
  files.push_back(SoName());
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(var)) {
      files.push_back(absl::StrCat(home, "/lib64/", SoName()));
    }
  }
  files.push_back("/usr/local/cuda/lib64/" + SoName());
  return files;
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) *missing = name;
  return *fn != nullptr;
}

absl::StatusOr<CublasLt> Load() {
  std::vector<std::string> tried;
  void* handle = nullptr;
  for (const std::string& file : Candidates()) {
    handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    tried.push_back(dlerror());
  }
  if (handle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cuBLASLt not found (", absl::StrJoin(tried, "; "),
        "); install CUDA's cuBLAS or point COALESCE_CUDA_LIBRARY_PATH at the "
        "folder holding ", SoName()));
  }
  CublasLt lt;
  std::string missing;
  const bool ok =
      Resolve(handle, "cublasLtCreate", &lt.Create, &missing) &&
      Resolve(handle, "cublasLtDestroy", &lt.Destroy, &missing) &&
      Resolve(handle, "cublasLtGetStatusName", &lt.GetStatusName, &missing) &&
      Resolve(handle, "cublasLtMatmul", &lt.Matmul, &missing) &&
      Resolve(handle, "cublasLtMatmulDescCreate", &lt.MatmulDescCreate, &missing) &&
      Resolve(handle, "cublasLtMatmulDescDestroy", &lt.MatmulDescDestroy, &missing) &&
      Resolve(handle, "cublasLtMatmulDescSetAttribute", &lt.MatmulDescSetAttribute, &missing) &&
      Resolve(handle, "cublasLtMatrixLayoutCreate", &lt.MatrixLayoutCreate, &missing) &&
      Resolve(handle, "cublasLtMatrixLayoutDestroy", &lt.MatrixLayoutDestroy, &missing) &&
      Resolve(handle, "cublasLtMatrixLayoutSetAttribute", &lt.MatrixLayoutSetAttribute, &missing) &&
      Resolve(handle, "cublasLtMatmulPreferenceCreate", &lt.MatmulPreferenceCreate, &missing) &&
      Resolve(handle, "cublasLtMatmulPreferenceDestroy", &lt.MatmulPreferenceDestroy, &missing) &&
      Resolve(handle, "cublasLtMatmulPreferenceSetAttribute", &lt.MatmulPreferenceSetAttribute, &missing) &&
      Resolve(handle, "cublasLtMatmulAlgoGetHeuristic", &lt.MatmulAlgoGetHeuristic, &missing);
  Dl_info info{};
  lt.path = ok && dladdr(reinterpret_cast<void*>(lt.Create), &info) != 0 &&
                    info.dli_fname != nullptr
                ? info.dli_fname
                : SoName();
  if (!ok) {
    return absl::FailedPreconditionError(
        absl::StrCat(lt.path, " lacks ", missing, ": too old a cuBLAS"));
  }
  auto version = reinterpret_cast<size_t (*)()>(dlsym(handle, "cublasLtGetVersion"));
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
  const std::string text =
      absl::StrCat(call, ": ", lt.GetStatusName(status));
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(text);
  }
  return absl::InternalError(text);
}

}  // namespace coalesce
