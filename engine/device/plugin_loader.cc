#include "engine/device/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {
namespace {

absl::StatusOr<DevicePlugin*> Open(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat("no device plugin at ", path));
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device plugin ", path, " does not load: ", dlerror()));
  }
  void* symbol = dlsym(handle, kDevicePluginSymbol);
  if (symbol == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device plugin ", path, " has no ", kDevicePluginSymbol));
  }
  DevicePlugin* plugin = reinterpret_cast<DevicePluginEntry>(symbol)();
  if (plugin == nullptr || plugin->abi() != kDevicePluginAbi) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device plugin ", path, " was built for another server (ABI ",
        plugin == nullptr ? -1 : plugin->abi(), ", expected ", kDevicePluginAbi,
        ")"));
  }
  return plugin;
}

}  // namespace

absl::StatusOr<DevicePlugin*> LoadDevicePlugin(const std::string& path) {
  static absl::Mutex mu;
  static auto* loaded ABSL_GUARDED_BY(mu) =
      new std::map<std::string, absl::StatusOr<DevicePlugin*>>();
  absl::MutexLock lock(&mu);
  auto it = loaded->find(path);
  if (it == loaded->end()) it = loaded->emplace(path, Open(path)).first;
  return it->second;
}

std::string DefaultCudaPluginPath() {
  if (const char* path = std::getenv("COALESCE_DEVICE_PLUGIN");
      path != nullptr && path[0] != '\0') {
    return path;
  }
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  const auto dir = error ? std::filesystem::path(".") : exe.parent_path();
  return (dir / ".." / "lib" / "libcoalesce_cuda.so")
      .lexically_normal()
      .string();
}

}  // namespace coalesce
