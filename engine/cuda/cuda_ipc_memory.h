// CudaIpcMemory: device memory another process exported with
// cudaIpcGetMemHandle, opened here with cudaIpcOpenMemHandle
// (DevicePlugin::OpenIpcMemory, for Triton's CUDA shared memory protocol).
#ifndef COALESCE_ENGINE_CUDA_CUDA_IPC_MEMORY_H_
#define COALESCE_ENGINE_CUDA_CUDA_IPC_MEMORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device_plugin.h"

namespace coalesce {

// InvalidArgument when `handle` is not the 64 bytes of a cudaIpcMemHandle_t
// or CUDA cannot open it on `ordinal`.
absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenCudaIpcMemory(
    int ordinal, const std::string& handle, size_t byte_size);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_IPC_MEMORY_H_
