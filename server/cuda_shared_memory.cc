#include "server/cuda_shared_memory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/device/plugin_loader.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenWithPlugin(
    int64_t device_id, const std::string& raw_handle, uint64_t byte_size) {
  absl::StatusOr<DevicePlugin*> plugin =
      LoadDevicePlugin(DefaultCudaPluginPath());
  if (!plugin.ok())
    return absl::FailedPreconditionError(plugin.status().message());
  absl::StatusOr<std::vector<DeviceInfo>> devices = (*plugin)->Devices();
  if (!devices.ok())
    return absl::FailedPreconditionError(devices.status().message());
  if (devices->empty()) return absl::FailedPreconditionError("no GPU");
  if (device_id < 0 || device_id >= static_cast<int64_t>(devices->size())) {
    return absl::InvalidArgumentError(absl::StrCat("device_id ", device_id,
                                                   ": this server has ",
                                                   devices->size(), " GPU(s)"));
  }
  return (*plugin)->OpenIpcMemory(static_cast<int>(device_id), raw_handle,
                                  byte_size);
}

std::string Failed(const std::string& name) {
  return absl::StrCat("failed to register CUDA shared memory region: '", name,
                      "'");
}

}  // namespace

CudaSharedMemoryRegistry::CudaSharedMemoryRegistry()
    : CudaSharedMemoryRegistry(OpenWithPlugin) {}

CudaSharedMemoryRegistry::CudaSharedMemoryRegistry(Opener opener)
    : opener_(std::move(opener)) {}

absl::Status CudaSharedMemoryRegistry::Register(const std::string& name,
                                                const std::string& raw_handle,
                                                int64_t device_id,
                                                uint64_t byte_size) {
  {
    absl::MutexLock lock(&mu_);
    if (regions_.contains(name)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "shared memory region '", name, "' is already registered"));
    }
  }
  auto memory = opener_(device_id, raw_handle, byte_size);
  if (!memory.ok()) {
    if (memory.status().code() == absl::StatusCode::kFailedPrecondition) {
      spdlog::info("CUDA shared memory region '{}' refused: {}", name,
                   std::string(memory.status().message()));
      return absl::InvalidArgumentError(
          absl::StrCat(Failed(name), ", GPUs not supported"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(Failed(name), ": ", memory.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (regions_.contains(name)) {  // registered meanwhile
    return absl::AlreadyExistsError(absl::StrCat("shared memory region '", name,
                                                 "' is already registered"));
  }
  regions_[name] = Region{{name, device_id, byte_size}, *std::move(memory)};
  return absl::OkStatus();
}

void CudaSharedMemoryRegistry::Unregister(const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (name.empty()) {
    regions_.clear();
  } else {
    regions_.erase(name);
  }
}

absl::StatusOr<std::vector<CudaSharedMemoryRegionInfo>>
CudaSharedMemoryRegistry::Status(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  std::vector<CudaSharedMemoryRegionInfo> infos;
  if (!name.empty()) {
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no CUDA shared memory region named '", name, "'"));
    }
    infos.push_back(it->second.info);
    return infos;
  }
  for (const auto& [unused, region] : regions_) infos.push_back(region.info);
  return infos;
}

absl::StatusOr<CudaSharedMemoryRegistry::Region> CudaSharedMemoryRegistry::Find(
    const std::string& name, uint64_t offset, uint64_t byte_size) const {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no shared memory region named '", name, "'"));
  }
  const uint64_t size = it->second.info.byte_size;
  if (offset > size || byte_size > size - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes [", offset, ", ", offset + byte_size,
                     ") are outside CUDA shared memory region '", name, "' of ",
                     size, " bytes"));
  }
  return it->second;
}

absl::StatusOr<DeviceMemoryRef> CudaSharedMemoryRegistry::Ref(
    const std::string& name, uint64_t offset, uint64_t byte_size) const {
  auto region = Find(name, offset, byte_size);
  if (!region.ok()) return region.status();
  return DeviceMemoryRef{region->memory, static_cast<size_t>(offset),
                         static_cast<size_t>(byte_size)};
}

}  // namespace coalesce
