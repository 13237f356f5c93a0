// CudaDevice: the Device (engine/device/device.h) on one CUDA GPU.
//
// Streams are non-blocking cudaStreams, events have timing disabled, device
// memory comes from cudaMalloc and pinned host memory from cudaHostAlloc;
// graphs are captured in thread-local mode and instantiated once.
// Each call first makes the device current on the calling thread, so any
// thread may use it. Errors are converted by cuda_status.h; sticky ones are
// recognised by IsSticky. Part of libcoalesce_cuda.so only.
#ifndef COALESCE_ENGINE_CUDA_CUDA_DEVICE_H_
#define COALESCE_ENGINE_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace coalesce {

// The cudaStream_t of a stream a CudaDevice created.
CUstream_st* CudaStreamOf(DeviceStream& stream);

class CudaDevice : public Device {
 public:
  // Unavailable when `ordinal` is not a usable device.
  static absl::StatusOr<std::shared_ptr<CudaDevice>> Open(int ordinal);

  std::string name() const override { return name_; }
  int ordinal() const { return ordinal_; }
  absl::StatusOr<std::unique_ptr<DeviceStream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateDevice(
      size_t bytes) override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocatePinnedHost(
      size_t bytes) override;
  absl::Status CopyToDevice(DeviceStream& stream, void* device_dst,
                            const void* host_src, size_t bytes) override;
  absl::Status CopyToHost(DeviceStream& stream, void* host_dst,
                          const void* device_src, size_t bytes) override;
  absl::Status CopyOnDevice(DeviceStream& stream, void* device_dst,
                            const void* device_src, size_t bytes) override;
  absl::Status RecordEvent(DeviceEvent& event, DeviceStream& stream) override;
  absl::Status StreamWaitEvent(DeviceStream& stream,
                               DeviceEvent& event) override;
  absl::Status SynchronizeEvent(DeviceEvent& event) override;
  bool IsSticky(const absl::Status& status) const override;
  absl::Status BeginCapture(DeviceStream& stream) override;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(
      DeviceStream& stream) override;
  absl::Status LaunchGraph(DeviceGraph& graph, DeviceStream& stream) override;

 private:
  CudaDevice(int ordinal, std::string name)
      : ordinal_(ordinal), name_(std::move(name)) {}
  absl::Status MakeCurrent() const;
  // cudaMemcpyAsync on `stream`; `direction` is a cudaMemcpyKind (kept out
  // of this header's includes).
  absl::Status Memcpy(DeviceStream& stream, void* dst, const void* src,
                      size_t bytes, int direction, const char* what) const;

  const int ordinal_;
  const std::string name_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_DEVICE_H_
