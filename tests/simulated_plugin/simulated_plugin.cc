// libcoalesce_simulated_plugin.so: a DevicePlugin (engine/device/
// device_plugin.h) over the simulated device, so end-to-end tests serve
// KIND_GPU models through the real plugin loader on machines without a GPU.
// The server loads it when COALESCE_DEVICE_PLUGIN names it.
//
// One device ("Simulated GPU", 1 GiB; COALESCE_SIMULATED_DEVICES=N for N of
// them). For tests of what the server does when the device misbehaves:
//   COALESCE_SIMULATED_HOLD=copy_to_host:N   op N (from 0) of that kind
//                          copy_to_device:N  never finishes, on every device
//                          kernel:N          opened: a hung GPU.
//   COALESCE_SIMULATED_HOLD_MARKER=FILE      created once the held op has
//                                            started, so a test knows the
//                                            device is hung (no sleeping).
//   COALESCE_SIMULATED_FAULT=KIND:N          op N of that kind faults while
//                                            it runs, sticky: every later
//                                            call on that device fails.
//
// CUDA shared memory (OpenIpcMemory): the simulated device's memory is the
// host's, so an "IPC handle" is "coalesce-simulated-ipc:" followed by the
// name of a POSIX shared memory object of the client (what tritonclient's
// system shared memory utilities create), mapped here. A test client
// registers it as a CUDA region and reads and writes it as system shared
// memory.
//   COALESCE_SIMULATED_IPC_LOG=FILE  each copy between such a region and
//                                    host memory (the path that is not zero
//                                    copy) appends "read N" or "write N".
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "engine/device/device_plugin.h"
#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"

namespace coalesce {
namespace {

constexpr char kIpcPrefix[] = "coalesce-simulated-ipc:";

class MappedSharedMemory : public SharedDeviceMemory {
 public:
  MappedSharedMemory(int ordinal, char* base, size_t size)
      : ordinal_(ordinal), base_(base), size_(size) {}
  ~MappedSharedMemory() override { munmap(base_, size_); }
  size_t size() const override { return size_; }
  int ordinal() const override { return ordinal_; }
  // The simulated device's memory is the host's.
  char* device_data() const override { return base_; }
  absl::Status Read(size_t offset, size_t bytes, void* host) override {
    Log("read", bytes);
    std::memcpy(host, base_ + offset, bytes);
    return absl::OkStatus();
  }
  absl::Status Write(size_t offset, const void* host, size_t bytes) override {
    Log("write", bytes);
    std::memcpy(base_ + offset, host, bytes);
    return absl::OkStatus();
  }

 private:
  static void Log(const char* what, size_t bytes) {
    const char* path = std::getenv("COALESCE_SIMULATED_IPC_LOG");
    if (path != nullptr)
      std::ofstream(path, std::ios::app) << what << " " << bytes << "\n";
  }

  const int ordinal_;
  char* const base_;
  const size_t size_;
};

absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> MapIpcHandle(
    int ordinal, const std::string& handle, size_t byte_size) {
  const std::string prefix = kIpcPrefix;
  if (handle.rfind(prefix, 0) != 0) {
    return absl::InvalidArgumentError(
        "not a simulated IPC handle (\"coalesce-simulated-ipc:<shm name>\")");
  }
  const std::string name = handle.substr(prefix.size());
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return absl::InvalidArgumentError("cannot open shared memory object '" +
                                      name + "'");
  }
  struct stat st {};
  void* base = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= byte_size &&
      byte_size > 0) {
    base = mmap(nullptr, byte_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (base == MAP_FAILED) {
    return absl::InvalidArgumentError(
        "cannot map " + std::to_string(byte_size) + " bytes of '" + name + "'");
  }
  return std::make_unique<MappedSharedMemory>(ordinal, static_cast<char*>(base),
                                              byte_size);
}

// "KIND:INDEX" from environment variable `name` (KIND copy_to_host,
// copy_to_device or kernel), or false.
bool OpFromEnv(const char* name, SimulatedDevice::OpKind* kind, int* index) {
  const char* text = std::getenv(name);
  if (text == nullptr) return false;
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], index)) return false;
  using Kind = SimulatedDevice::OpKind;
  if (parts[0] == "copy_to_host") {
    *kind = Kind::kCopyToHost;
  } else if (parts[0] == "copy_to_device") {
    *kind = Kind::kCopyToDevice;
  } else if (parts[0] == "kernel") {
    *kind = Kind::kKernel;
  } else {
    return false;
  }
  return true;
}

// The sticky fault COALESCE_SIMULATED_FAULT asks for, if any: that op of
// each device opened faults while it runs (as a CUDA kernel fault poisons
// its context).
void ApplyFault(const std::shared_ptr<SimulatedDevice>& device) {
  SimulatedDevice::OpKind kind;
  int index = 0;
  if (!OpFromEnv("COALESCE_SIMULATED_FAULT", &kind, &index)) return;
  device->FaultOnRun(kind, index,
                     absl::InternalError("simulated sticky device fault"));
}

// The hold COALESCE_SIMULATED_HOLD asks for, if any.
void ApplyHold(const std::shared_ptr<SimulatedDevice>& device) {
  SimulatedDevice::OpKind kind;
  int index = 0;
  if (!OpFromEnv("COALESCE_SIMULATED_HOLD", &kind, &index)) return;
  device->Hold(kind, index);
  const char* marker = std::getenv("COALESCE_SIMULATED_HOLD_MARKER");
  if (marker == nullptr) return;
  // The watcher keeps the device alive: a hung device is never released.
  std::thread([device, kind, index, path = std::string(marker)] {
    if (device->AwaitStart(kind, index, absl::Hours(24))) {
      std::ofstream(path) << "held\n";
    }
  }).detach();
}

int DeviceCount() {
  const char* count = std::getenv("COALESCE_SIMULATED_DEVICES");
  int n = 1;
  if (count == nullptr || !absl::SimpleAtoi(count, &n) || n < 1 || n > 8)
    return 1;
  return n;
}

class SimulatedPlugin : public DevicePlugin {
 public:
  std::string platform() const override { return "simulated"; }

  // COALESCE_SIMULATED_DEVICES=N (1 to 8; default 1) devices, ordinals 0
  // to N - 1: how the server spreads instances over several GPUs.
  absl::StatusOr<std::vector<DeviceInfo>> Devices() override {
    std::vector<DeviceInfo> devices;
    for (int i = 0; i < DeviceCount(); ++i)
      devices.push_back({i, "Simulated GPU", size_t{1} << 30, 90});
    return devices;
  }

  absl::StatusOr<std::shared_ptr<Device>> OpenDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= DeviceCount())
      return absl::NotFoundError("no simulated device of that ordinal");
    auto device = std::make_shared<SimulatedDevice>(SimulatedDevice::Options{});
    ApplyHold(device);
    ApplyFault(device);
    return std::shared_ptr<Device>(device);
  }

  absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenIpcMemory(
      int ordinal, const std::string& handle, size_t byte_size) override {
    if (ordinal < 0 || ordinal >= DeviceCount())
      return absl::InvalidArgumentError("no simulated device of that ordinal");
    return MapIpcHandle(ordinal, handle, byte_size);
  }

  absl::StatusOr<std::unique_ptr<DeviceKernels>> CreateKernels(
      std::shared_ptr<Device> device, const DeviceKernelOptions&) override {
    auto simulated = std::dynamic_pointer_cast<SimulatedDevice>(device);
    if (simulated == nullptr)
      return absl::InvalidArgumentError("not a device of this plugin");
    return CreateSimulatedKernels(simulated.get());
  }
};

}  // namespace
}  // namespace coalesce

extern "C" __attribute__((visibility("default"))) coalesce::DevicePlugin*
coalesce_device_plugin_v1() {
  static auto* plugin = new coalesce::SimulatedPlugin();
  return plugin;
}
