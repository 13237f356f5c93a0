// DevicePlugin: what a runtime-loaded device library offers the server.
//
// The CUDA executor lives in libcoalesce_cuda.so, which the server dlopens
// only when a model asks for a GPU (docs/device-pipeline.md): the server
// binary never links CUDA and runs unchanged where there is no driver. The
// library exports one C symbol, kDevicePluginSymbol, a function returning its
// DevicePlugin (owned by the library, alive until the process exits).
//
// Plugin and server are built together from one tree by one compiler, so C++
// types (absl::Status, std::shared_ptr, Device) cross the boundary; the ABI
// number guards against a stale library from another build.
// Every method is thread-safe.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_PLUGIN_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_PLUGIN_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/device/device_kernels.h"
#include "engine/shared_device_memory.h"

namespace coalesce {

// 4: DeviceKernels::Broadcast (Expand). 5: an Args struct for every
// primitive of more than four arguments. 8: DeviceKernels::Attention.
// 10: DevicePlugin::OpenIpcMemory. 11: SharedDeviceMemory::ordinal and
// device_data (zero-copy CUDA shared memory).
inline constexpr int kDevicePluginAbi = 11;
inline constexpr char kDevicePluginSymbol[] = "coalesce_device_plugin_v1";

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  size_t memory_bytes = 0;
  int compute_capability = 0;  // 90 for sm_90
};

class DevicePlugin {
 public:
  virtual ~DevicePlugin() = default;

  virtual int abi() const { return kDevicePluginAbi; }
  // "cuda": what instance_group.kind KIND_GPU maps to.
  virtual std::string platform() const = 0;

  // The devices this process can use. Unavailable, with the runtime's own
  // words ("no CUDA driver: cudaErrorInsufficientDriver ..."), when none.
  virtual absl::StatusOr<std::vector<DeviceInfo>> Devices() = 0;

  // A context on device `ordinal` (streams, memory).
  virtual absl::StatusOr<std::shared_ptr<Device>> OpenDevice(int ordinal) = 0;

  // The operator primitives on `device` (from OpenDevice), with their own
  // library handles and workspaces: one per executor instance.
  // FailedPrecondition when a library they need (cuBLASLt) is missing.
  virtual absl::StatusOr<std::unique_ptr<DeviceKernels>> CreateKernels(
      std::shared_ptr<Device> device, const DeviceKernelOptions& options) = 0;

  // The `byte_size` bytes of device memory another process exported on
  // device `ordinal`: `handle` is its IPC handle as Triton's clients send
  // it (CUDA: the 64 bytes of a cudaIpcMemHandle_t). InvalidArgument when
  // the handle cannot be opened there.
  virtual absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenIpcMemory(
      int ordinal, const std::string& handle, size_t byte_size) {
    return absl::UnimplementedError(
        "this device plugin cannot open IPC memory handles");
  }
};

extern "C" {
using DevicePluginEntry = DevicePlugin* (*)();
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_PLUGIN_H_
