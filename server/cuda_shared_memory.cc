#include "server/cuda_shared_memory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/instance_placement.h"
#include "spdlog/spdlog.h"

namespace coalesce {
CudaSharedMemoryRegistry::CudaSharedMemoryRegistry()
    : CudaSharedMemoryRegistry(UsableGpu) {}

CudaSharedMemoryRegistry::CudaSharedMemoryRegistry(GpuCheck gpu_check)
    : gpu_check_(std::move(gpu_check)) {}

absl::Status CudaSharedMemoryRegistry::Register(const std::string& name,
                                                const std::string& raw_handle,
                                                int64_t device_id,
                                                uint64_t byte_size) {
  if (absl::Status gpu = gpu_check_(); !gpu.ok()) {
    spdlog::info("CUDA shared memory region '{}' refused: {}", name,
                 std::string(gpu.message()));
    return absl::InvalidArgumentError(
        absl::StrCat("failed to register CUDA shared memory region: '", name,
                     "', GPUs not supported"));
  }
  return absl::UnimplementedError(absl::StrCat(
      "failed to register CUDA shared memory region: '", name,
      "': opening CUDA IPC handles is not supported by this server yet; "
      "system shared memory is"));
}

void CudaSharedMemoryRegistry::Unregister(const std::string&) {}

absl::StatusOr<std::vector<CudaSharedMemoryRegionInfo>>
CudaSharedMemoryRegistry::Status(const std::string& name) const {
  if (!name.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA shared memory region named '", name, "'"));
  }
  return std::vector<CudaSharedMemoryRegionInfo>{};
}

}  // namespace coalesce
