// CudaSharedMemoryRegistry: Triton's CUDA shared memory extension
// (CudaSharedMemoryRegister / Status / Unregister), as far as this server
// has it.
//
// Registering a region means opening the client's cudaIpc handle on the
// server's GPU. On a machine where the device plugin finds no usable GPU
// (no plugin, no driver, no device), Register fails with InvalidArgument
// and Triton's own words for a server without GPUs: "failed to register
// CUDA shared memory region: 'NAME', GPUs not supported". Where a GPU is
// usable, opening handles is not built yet: Unimplemented, saying so and
// that system shared memory works. So no region is ever registered: Status
// lists none (NotFound for a name, as for system shared memory), and
// Unregister, of one name or of all (empty name), succeeds: Triton's
// clients unregister everything as clean-up before they start, and that
// must not fail. Thread-safe.
#ifndef COALESCE_SERVER_CUDA_SHARED_MEMORY_H_
#define COALESCE_SERVER_CUDA_SHARED_MEMORY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coalesce {

struct CudaSharedMemoryRegionInfo {
  std::string name;
  int64_t device_id = 0;
  uint64_t byte_size = 0;
};

class CudaSharedMemoryRegistry {
 public:
  // OK when a GPU is usable; else the reason. The default asks the device
  // plugin (DefaultCudaPluginPath) for its devices.
  using GpuCheck = std::function<absl::Status()>;

  CudaSharedMemoryRegistry();
  explicit CudaSharedMemoryRegistry(GpuCheck gpu_check);

  absl::Status Register(const std::string& name, const std::string& raw_handle,
                        int64_t device_id, uint64_t byte_size);

  // Forgets `name` (every region when empty); never an error.
  void Unregister(const std::string& name);

  // `name`'s region (every region's when empty); NotFound for an unknown
  // name.
  absl::StatusOr<std::vector<CudaSharedMemoryRegionInfo>> Status(
      const std::string& name) const;

 private:
  GpuCheck gpu_check_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_CUDA_SHARED_MEMORY_H_
