// DeviceConstants: a model's constants on one device, uploaded once and
// shared by every GraphProgram of that model on it. The server gives the
// instances of one model version on one GPU a single store
// (engine/device/gpu_instance.h), so the weights take the GPU's memory once,
// not once per instance.
//
// An entry is a constant's bytes as the model holds them, keyed by their
// host address and size, or a converted form of them (float16, KRSC
// convolution weights), keyed by the conversion too. Each entry keeps its
// owner (the model or plan that holds the host data) alive, so no address
// is reused while its entry lives: equal keys mean equal bytes.
//
// Programs bind one at a time: a binding holds mu() from Begin to Commit
// or Rollback. Rollback frees the entries added since Begin, so a shape
// that fails to bind leaves nothing of its own on the device; another
// program cannot have taken them meanwhile. Uploads go through one pinned
// staging buffer on the store's own stream and are waited for.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_CONSTANTS_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_CONSTANTS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/device/device.h"
#include "engine/device/device_ops.h"

namespace coalesce {

class DeviceConstants {
 public:
  explicit DeviceConstants(std::shared_ptr<Device> device);
  ~DeviceConstants();
  DeviceConstants(const DeviceConstants&) = delete;
  DeviceConstants& operator=(const DeviceConstants&) = delete;

  const std::shared_ptr<Device>& device() const { return device_; }
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }

  // Starts a binding: Rollback frees what is added from now on.
  void Begin() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps what the binding added.
  void Commit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees every entry added since Begin.
  void Rollback() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // `bytes` (> 0) at `host` on the device: uploaded at the first call for
  // this address and size, shared after.
  absl::StatusOr<void*> Constant(const char* host, size_t bytes,
                                 std::shared_ptr<const void> owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `constant` in its converted form on the device, likewise.
  absl::StatusOr<const void*> Converted(
      const LoweredNode::ConvertedConstant& constant,
      std::shared_ptr<const void> owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `bytes` (> 0) at `host` in new device memory the caller owns.
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Upload(const char* host,
                                                       size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Device bytes the entries hold.
  size_t device_bytes() const;

 private:
  using RawKey = std::pair<const char*, size_t>;
  using ConvertedKey = decltype(LoweredNode::ConvertedConstant{}.Key());
  struct Entry {
    std::unique_ptr<DeviceBuffer> buffer;
    std::shared_ptr<const void> owner;
  };

  const std::shared_ptr<Device> device_;
  mutable absl::Mutex mu_;
  std::map<RawKey, Entry> raw_ ABSL_GUARDED_BY(mu_);
  std::map<ConvertedKey, Entry> converted_ ABSL_GUARDED_BY(mu_);
  std::vector<RawKey> new_raw_ ABSL_GUARDED_BY(mu_);
  std::vector<ConvertedKey> new_converted_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DeviceStream> stream_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DeviceEvent> done_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DeviceBuffer> staging_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_CONSTANTS_H_
