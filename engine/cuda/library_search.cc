#include "engine/cuda/library_search.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace coalesce {

absl::StatusOr<void*> DlopenCudaLibrary(const std::string& soname,
                                        const std::string& what) {
  std::vector<std::string> files;
  if (const char* dirs = std::getenv("COALESCE_CUDA_LIBRARY_PATH")) {
    for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
      files.push_back(absl::StrCat(dir, "/", soname));
    }
  }
  files.push_back(soname);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(var)) {
      files.push_back(absl::StrCat(home, "/lib64/", soname));
    }
  }
  files.push_back("/usr/local/cuda/lib64/" + soname);
  std::vector<std::string> tried;
  for (const std::string& file : files) {
    if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    tried.push_back(dlerror());
  }
  return absl::FailedPreconditionError(absl::StrCat(
      soname, " not found (", absl::StrJoin(tried, "; "), "); install ", what,
      " or point COALESCE_CUDA_LIBRARY_PATH at the folder holding ", soname));
}

std::string LibraryPathOf(void* symbol) {
  Dl_info info{};
  if (symbol == nullptr || dladdr(symbol, &info) == 0 ||
      info.dli_fname == nullptr)
    return "";
  return info.dli_fname;
}

void* LookupSymbol(void* handle, const char* name) {
  return dlsym(handle, name);
}

}  // namespace coalesce
