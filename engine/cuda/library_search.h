// DlopenCudaLibrary: finds and loads one of CUDA's math libraries
// (libcublasLt.so.13, libcudnn.so.9) at run time, so the plugin loads where
// they are missing and says so. First hit wins:
//   1. every folder in $COALESCE_CUDA_LIBRARY_PATH (colon-separated): how
//      scripts/gpu-check points at the nvidia-* Python wheels, which is
//      where a typical PyTorch machine has cuBLAS and cuDNN;
//   2. the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig);
//   3. $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64.
#ifndef COALESCE_ENGINE_CUDA_LIBRARY_SEARCH_H_
#define COALESCE_ENGINE_CUDA_LIBRARY_SEARCH_H_

#include <string>

#include "absl/status/statusor.h"

namespace coalesce {

// The dlopen handle (RTLD_NOW | RTLD_LOCAL, never closed), or
// FailedPrecondition listing every place tried and what to install
// (`what`, e.g. "CUDA's cuBLAS").
absl::StatusOr<void*> DlopenCudaLibrary(const std::string& soname,
                                        const std::string& what);

// The file a loaded symbol comes from ("" when unknown).
std::string LibraryPathOf(void* symbol);

// Sets `*fn` to symbol `name` of `handle`; false (and `*missing` = name)
// when the library lacks it.
void* LookupSymbol(void* handle, const char* name);
template <typename Fn>
bool ResolveSymbol(void* handle, const char* name, Fn* fn,
                   std::string* missing) {
  *fn = reinterpret_cast<Fn>(LookupSymbol(handle, name));
  if (*fn == nullptr) *missing = name;
  return *fn != nullptr;
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_LIBRARY_SEARCH_H_
