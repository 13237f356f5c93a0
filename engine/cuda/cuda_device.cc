#include "engine/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_status.h"

namespace coalesce {
namespace {

class CudaStream : public DeviceStream {
 public:
  explicit CudaStream(cudaStream_t stream) : stream(stream) {}
  ~CudaStream() override { cudaStreamDestroy(stream); }
  const cudaStream_t stream;
};

class CudaEvent : public DeviceEvent {
 public:
  explicit CudaEvent(cudaEvent_t event) : event(event) {}
  ~CudaEvent() override { cudaEventDestroy(event); }
  const cudaEvent_t event;
};

class CudaBuffer : public DeviceBuffer {
 public:
  CudaBuffer(void* data, size_t size, bool pinned)
      : data_(data), size_(size), pinned_(pinned) {}
  ~CudaBuffer() override { pinned_ ? cudaFreeHost(data_) : cudaFree(data_); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* const data_;
  const size_t size_;
  const bool pinned_;
};

cudaStream_t StreamOf(DeviceStream& s) {
  return static_cast<CudaStream&>(s).stream;
}
cudaEvent_t EventOf(DeviceEvent& e) { return static_cast<CudaEvent&>(e).event; }

}  // namespace

absl::StatusOr<std::shared_ptr<CudaDevice>> CudaDevice::Open(int ordinal) {
  int count = 0;
  if (absl::Status s = CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
      !s.ok()) {
    return s;
  }
  if (ordinal < 0 || ordinal >= count) {
    return absl::UnavailableError(absl::StrCat(
        "cuda:", ordinal, " does not exist (", count, " CUDA devices)"));
  }
  cudaDeviceProp prop{};
  if (absl::Status s = CudaStatus(cudaGetDeviceProperties(&prop, ordinal),
                                  "cudaGetDeviceProperties");
      !s.ok()) {
    return s;
  }
  return std::shared_ptr<CudaDevice>(
      new CudaDevice(ordinal, absl::StrCat("cuda:", ordinal, " (", prop.name, ")")));
}

absl::Status CudaDevice::MakeCurrent() const {
  return CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice");
}

absl::StatusOr<std::unique_ptr<DeviceStream>> CudaDevice::CreateStream() {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  cudaStream_t stream = nullptr;
  if (absl::Status s = CudaStatus(
          cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags");
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaStream>(stream);
}

absl::StatusOr<std::unique_ptr<DeviceEvent>> CudaDevice::CreateEvent() {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  cudaEvent_t event = nullptr;
  if (absl::Status s = CudaStatus(
          cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaEvent>(event);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CudaDevice::AllocateDevice(
    size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  void* p = nullptr;
  if (absl::Status s = CudaStatus(cudaMalloc(&p, bytes),
                                  absl::StrCat("cudaMalloc(", bytes, ")"));
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaBuffer>(p, bytes, /*pinned=*/false);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CudaDevice::AllocatePinnedHost(
    size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  void* p = nullptr;
  if (absl::Status s =
          CudaStatus(cudaHostAlloc(&p, bytes, cudaHostAllocPortable),
                     absl::StrCat("cudaHostAlloc(", bytes, ")"));
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaBuffer>(p, bytes, /*pinned=*/true);
}

absl::Status CudaDevice::CopyToDevice(DeviceStream& stream, void* device_dst,
                                      const void* host_src, size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaMemcpyAsync(device_dst, host_src, bytes,
                                    cudaMemcpyHostToDevice, StreamOf(stream)),
                    "cudaMemcpyAsync to the device");
}

absl::Status CudaDevice::CopyToHost(DeviceStream& stream, void* host_dst,
                                    const void* device_src, size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaMemcpyAsync(host_dst, device_src, bytes,
                                    cudaMemcpyDeviceToHost, StreamOf(stream)),
                    "cudaMemcpyAsync to the host");
}

absl::Status CudaDevice::CopyOnDevice(DeviceStream& stream, void* device_dst,
                                      const void* device_src, size_t bytes) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaMemcpyAsync(device_dst, device_src, bytes,
                                    cudaMemcpyDeviceToDevice, StreamOf(stream)),
                    "cudaMemcpyAsync on the device");
}

absl::Status CudaDevice::RecordEvent(DeviceEvent& event, DeviceStream& stream) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaEventRecord(EventOf(event), StreamOf(stream)),
                    "cudaEventRecord");
}

absl::Status CudaDevice::StreamWaitEvent(DeviceStream& stream,
                                         DeviceEvent& event) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaStreamWaitEvent(StreamOf(stream), EventOf(event), 0),
                    "cudaStreamWaitEvent");
}

absl::Status CudaDevice::SynchronizeEvent(DeviceEvent& event) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaEventSynchronize(EventOf(event)),
                    "cudaEventSynchronize");
}

bool CudaDevice::IsSticky(const absl::Status& status) const {
  return IsStickyCudaStatus(status);
}

}  // namespace coalesce
