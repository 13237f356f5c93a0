// HostSharedDeviceMemory: a SharedDeviceMemory (engine/shared_device_memory.h)
// over a host buffer the test shares, for devices whose memory is the host's
// (the simulated device): what a client's CUDA shared memory region is to
// the executor, without a GPU. Its copies count, so a test can tell the
// zero-copy path (no Read or Write) from the host path.
#ifndef COALESCE_ENGINE_TESTING_HOST_SHARED_DEVICE_MEMORY_H_
#define COALESCE_ENGINE_TESTING_HOST_SHARED_DEVICE_MEMORY_H_

#include <atomic>
#include <cstring>
#include <memory>
#include <string>

#include "engine/shared_device_memory.h"

namespace coalesce {

class HostSharedDeviceMemory : public SharedDeviceMemory {
 public:
  HostSharedDeviceMemory(int ordinal, std::string bytes)
      : ordinal_(ordinal), bytes_(std::move(bytes)) {}

  size_t size() const override { return bytes_.size(); }
  int ordinal() const override { return ordinal_; }
  char* device_data() const override {
    return const_cast<char*>(bytes_.data());
  }
  absl::Status Read(size_t offset, size_t bytes, void* host) override {
    ++host_copies_;
    std::memcpy(host, bytes_.data() + offset, bytes);
    return absl::OkStatus();
  }
  absl::Status Write(size_t offset, const void* host, size_t bytes) override {
    ++host_copies_;
    std::memcpy(bytes_.data() + offset, host, bytes);
    return absl::OkStatus();
  }

  const std::string& bytes() const { return bytes_; }
  int host_copies() const { return host_copies_; }

 private:
  const int ordinal_;
  std::string bytes_;
  std::atomic<int> host_copies_{0};
};

// A ref to all of a new HostSharedDeviceMemory holding `bytes`.
inline DeviceMemoryRef HostDeviceRef(int ordinal, std::string bytes) {
  auto memory = std::make_shared<HostSharedDeviceMemory>(ordinal, bytes);
  return DeviceMemoryRef{memory, 0, bytes.size()};
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_TESTING_HOST_SHARED_DEVICE_MEMORY_H_
