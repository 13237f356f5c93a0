// Loading a DevicePlugin from a shared library, once per path per process.
//
// The library is opened with dlopen (RTLD_NOW | RTLD_LOCAL) and never closed:
// devices and executors from it may live as long as the process.
#ifndef COALESCE_ENGINE_DEVICE_PLUGIN_LOADER_H_
#define COALESCE_ENGINE_DEVICE_PLUGIN_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device_plugin.h"

namespace coalesce {

// The plugin in the library at `path`. NotFound when there is no file there;
// FailedPrecondition with dlopen's or dlsym's message when it does not load
// or lacks the entry symbol, or when its ABI differs. Thread-safe; a failure
// is remembered for the path (the same answer next time).
absl::StatusOr<DevicePlugin*> LoadDevicePlugin(const std::string& path);

// Where the server looks for libcoalesce_cuda.so: `<dir of the running
// executable>/../lib/`, which is build/lib/ in a build tree (the server is
// build/server/coalesce-server) and lib/ in a bundle (bin/coalesce-server).
// $COALESCE_DEVICE_PLUGIN, when set and not empty, names another plugin
// instead (the tests' simulated device, tests/simulated_plugin/).
std::string DefaultCudaPluginPath();

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_PLUGIN_LOADER_H_
