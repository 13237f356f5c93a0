// SharedMemoryManager: the system shared memory regions clients register
// (KServe v2 / Triton shared-memory extension), so that request inputs are
// read from, and outputs written to, memory the client shares with the
// server instead of travelling in the gRPC messages.
//
// A region is a POSIX shared memory object (shm_open `key`, created and
// owned by the client; the server never creates or unlinks it) mapped from
// `offset` for `byte_size` bytes. Every use names a span inside a region and
// is bounds-checked; a span holds its mapping alive, so unregistering a
// region while requests still use it is safe (the memory is unmapped when
// the last of them finishes). Thread-safe.
#ifndef COALESCE_SERVER_SHARED_MEMORY_H_
#define COALESCE_SERVER_SHARED_MEMORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/shared_device_memory.h"

namespace coalesce {

struct SharedMemoryRegionInfo {
  std::string name, key;
  uint64_t offset = 0, byte_size = 0;
};

// A span of a registered region; keeps the region mapped while it lives.
// A span of a CUDA region has `device` set and no host `data`.
struct SharedMemorySpan {
  std::shared_ptr<void> mapping;  // the region's; null for an empty span
  char* data = nullptr;
  size_t size = 0;
  DeviceMemoryRef device;
};

// Regions of device memory that requests may name beside the system ones
// (CUDA shared memory: cuda_shared_memory.h).
class DeviceMemoryRegions {
 public:
  virtual ~DeviceMemoryRegions() = default;
  virtual absl::StatusOr<DeviceMemoryRef> Ref(const std::string& name,
                                              uint64_t offset,
                                              uint64_t byte_size) const = 0;
};

class SharedMemoryManager {
 public:
  // AlreadyExists when `name` is registered; InvalidArgument when the
  // object cannot be opened or mapped, or is smaller than offset + byte_size,
  // naming the region and key.
  absl::Status Register(const std::string& name, const std::string& key,
                        uint64_t offset, uint64_t byte_size);

  // Forgets `name` (every region when empty). Unknown names are not an error.
  void Unregister(const std::string& name);

  // `name`'s (every region's when empty); NotFound for an unknown name.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> Status(
      const std::string& name) const;

  // [offset, offset + byte_size) of region `name`. NotFound for an unknown
  // region, InvalidArgument when the span does not lie inside it.
  absl::StatusOr<SharedMemorySpan> Span(const std::string& name,
                                        uint64_t offset,
                                        uint64_t byte_size) const;

  // Where requests look for regions this manager does not hold (Triton's
  // system and CUDA regions share one name space for requests). Null: none.
  // REQUIRES: `cuda` outlives this manager.
  void set_cuda_regions(const DeviceMemoryRegions* cuda) { cuda_ = cuda; }

  // An input's or output's span: Span, or else a span of a CUDA region
  // (`device` set; DeviceMemoryRegions::Ref).
  absl::StatusOr<SharedMemorySpan> TensorSpan(const std::string& name,
                                              uint64_t offset,
                                              uint64_t byte_size) const;

 private:
  struct Region {
    SharedMemoryRegionInfo info;
    std::shared_ptr<void> mapping;  // unmaps when the last user lets go
    char* base = nullptr;           // the byte at info.offset
  };

  // Whether region `name` is a system region here.
  bool Holds(const std::string& name) const;

  mutable absl::Mutex mu_;
  std::map<std::string, Region> regions_ ABSL_GUARDED_BY(mu_);
  const DeviceMemoryRegions* cuda_ = nullptr;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_SHARED_MEMORY_H_
