// libcoalesce_cuda.so's entry point: the DevicePlugin for CUDA GPUs
// (engine/device/device_plugin.h).
#include <cuda_runtime_api.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_device.h"
#include "engine/cuda/cuda_ipc_memory.h"
#include "engine/cuda/cuda_kernels.h"
#include "engine/cuda/cuda_status.h"
#include "engine/device/device_plugin.h"

namespace coalesce {
namespace {

std::string Versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  auto text = [](int v) {
    return v == 0 ? std::string("none")
                  : absl::StrCat(v / 1000, ".", (v % 1000) / 10);
  };
  return absl::StrCat("CUDA runtime ", text(runtime), ", driver ",
                      text(driver));
}

class CudaPlugin : public DevicePlugin {
 public:
  std::string platform() const override { return "cuda"; }

  absl::StatusOr<std::vector<DeviceInfo>> Devices() override {
    int count = 0;
    absl::Status s =
        CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "no usable CUDA device (", Versions(), "): ", s.message()));
    }
    if (count == 0) {
      return absl::UnavailableError(
          absl::StrCat("no CUDA device (", Versions(), ")"));
    }
    std::vector<DeviceInfo> devices;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      s = CudaStatus(cudaGetDeviceProperties(&prop, i),
                     "cudaGetDeviceProperties");
      if (!s.ok()) return s;
      devices.push_back(
          {i, prop.name, prop.totalGlobalMem, prop.major * 10 + prop.minor});
    }
    return devices;
  }

  absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenIpcMemory(
      int ordinal, const std::string& handle, size_t byte_size) override {
    return OpenCudaIpcMemory(ordinal, handle, byte_size);
  }

  absl::StatusOr<std::shared_ptr<Device>> OpenDevice(int ordinal) override {
    auto device = CudaDevice::Open(ordinal);
    if (!device.ok()) return device.status();
    return std::shared_ptr<Device>(*std::move(device));
  }

  absl::StatusOr<std::unique_ptr<DeviceKernels>> CreateKernels(
      std::shared_ptr<Device> device,
      const DeviceKernelOptions& options) override {
    auto cuda = std::dynamic_pointer_cast<CudaDevice>(device);
    if (cuda == nullptr) {
      return absl::InvalidArgumentError("not a device of this plugin");
    }
    return CreateCudaKernels(std::move(cuda), options);
  }
};

}  // namespace
}  // namespace coalesce

extern "C" __attribute__((visibility("default"))) coalesce::DevicePlugin*
coalesce_device_plugin_v1() {
  static auto* plugin = new coalesce::CudaPlugin();
  return plugin;
}
