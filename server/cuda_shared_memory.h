// CudaSharedMemoryRegistry: Triton's CUDA shared memory extension
// (CudaSharedMemoryRegister / Status / Unregister), and the registered
// regions as inference requests use them.
//
// Registering opens the client's IPC handle (the 64 bytes of a
// cudaIpcMemHandle_t) on device `device_id` through the device plugin
// (DevicePlugin::OpenIpcMemory). On a machine where the plugin finds no
// usable GPU (no plugin, no driver, no device), Register fails with
// InvalidArgument and Triton's words for a server without GPUs: "failed to
// register CUDA shared memory region: 'NAME', GPUs not supported". A handle
// that cannot be opened fails with InvalidArgument giving the reason; a
// registered name, with AlreadyExists. Unregister, of one name or of all
// (empty name), never fails: Triton's clients unregister everything as
// clean-up before they start.
//
// Requests (SharedMemoryManager::InputSpan / OutputSpan, which look here
// for names that are not system regions) name spans of a region as
// DeviceMemoryRefs (engine/shared_device_memory.h): a GPU instance on the
// region's device copies an input from it into its batch, and its output
// rows into it, device to device (zero copy); other instances go through
// the host (the ref's Read and Write). A ref keeps its region open, so
// unregistering while requests use it is safe. Thread-safe.
#ifndef COALESCE_SERVER_CUDA_SHARED_MEMORY_H_
#define COALESCE_SERVER_CUDA_SHARED_MEMORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/device/device_plugin.h"
#include "server/shared_memory.h"

namespace coalesce {

struct CudaSharedMemoryRegionInfo {
  std::string name;
  int64_t device_id = 0;
  uint64_t byte_size = 0;
};

class CudaSharedMemoryRegistry : public DeviceMemoryRegions {
 public:
  // Opens a client's handle: FailedPrecondition (with the reason) when this
  // machine has no usable GPU, InvalidArgument when the handle cannot be
  // opened on that device.
  using Opener =
      std::function<absl::StatusOr<std::unique_ptr<SharedDeviceMemory>>(
          int64_t device_id, const std::string& raw_handle,
          uint64_t byte_size)>;

  // Opens handles through the device plugin (DefaultCudaPluginPath).
  CudaSharedMemoryRegistry();
  explicit CudaSharedMemoryRegistry(Opener opener);

  absl::Status Register(const std::string& name, const std::string& raw_handle,
                        int64_t device_id, uint64_t byte_size);

  // Forgets `name` (every region when empty); never an error.
  void Unregister(const std::string& name);

  // `name`'s region (every region's when empty); NotFound for an unknown
  // name.
  absl::StatusOr<std::vector<CudaSharedMemoryRegionInfo>> Status(
      const std::string& name) const;

  // [offset, offset + byte_size) of region `name`. NotFound for an unknown
  // region, InvalidArgument when the span does not lie inside it.
  absl::StatusOr<DeviceMemoryRef> Ref(const std::string& name, uint64_t offset,
                                      uint64_t byte_size) const override;

 private:
  struct Region {
    CudaSharedMemoryRegionInfo info;
    std::shared_ptr<SharedDeviceMemory> memory;
  };
  absl::StatusOr<Region> Find(const std::string& name, uint64_t offset,
                              uint64_t byte_size) const;

  Opener opener_;
  mutable absl::Mutex mu_;
  std::map<std::string, Region> regions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_CUDA_SHARED_MEMORY_H_
