// SharedDeviceMemory and DeviceMemoryRef: device memory another process
// exported (a client's CUDA shared memory region, cudaIpcMemHandle_t),
// mapped into this one, and a span of it that a request tensor lies in.
//
// A request input or output in such a span takes one of two paths:
//   - zero copy: an executor instance on the same device (BatchSlot::
//     Addresses) copies the span's bytes into its batch's device buffer, or
//     its output rows into the span, device to device on its own streams;
//   - host: anything else (a CPU instance, another GPU) reads the bytes to
//     host memory with Read, or writes them back with Write, synchronously.
// A ref shares ownership of its mapping, so a region unregistered while a
// request uses it stays mapped until the request lets go.
#ifndef COALESCE_ENGINE_SHARED_DEVICE_MEMORY_H_
#define COALESCE_ENGINE_SHARED_DEVICE_MEMORY_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"

namespace coalesce {

// Released (the mapping closed) on destruction. Thread-safe.
class SharedDeviceMemory {
 public:
  virtual ~SharedDeviceMemory() = default;
  virtual size_t size() const = 0;
  // The device it lies on: the plugin's ordinal (DeviceInfo::ordinal).
  virtual int ordinal() const = 0;
  // Its first byte as this process addresses it on that device: a source or
  // destination of Device::CopyOnDevice on the device's streams.
  virtual char* device_data() const = 0;
  // Synchronous copies to and from host memory, ordered after every copy a
  // client finished before it sent its request.
  // REQUIRES: offset + bytes <= size().
  virtual absl::Status Read(size_t offset, size_t bytes, void* host) = 0;
  virtual absl::Status Write(size_t offset, const void* host, size_t bytes) = 0;
};

// [offset, offset + size) of `memory`. Empty (memory null) when a tensor is
// not in device memory.
struct DeviceMemoryRef {
  std::shared_ptr<SharedDeviceMemory> memory;
  size_t offset = 0;
  size_t size = 0;

  explicit operator bool() const { return memory != nullptr; }
  char* device_data() const { return memory->device_data() + offset; }
  absl::Status Read(void* host) const {
    return memory->Read(offset, size, host);
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SHARED_DEVICE_MEMORY_H_
