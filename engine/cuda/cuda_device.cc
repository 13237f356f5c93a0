#include "engine/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_status.h"

namespace coalesce {
namespace {

// Destructors make their device current first, so that freeing on a thread
// that never used it does not create a context on device 0.
class CudaStream : public DeviceStream {
 public:
  CudaStream(int ordinal, cudaStream_t stream)
      : ordinal(ordinal), stream(stream) {}
  ~CudaStream() override {
    cudaSetDevice(ordinal);
    cudaStreamDestroy(stream);
  }
  const int ordinal;
  const cudaStream_t stream;
};

class CudaEvent : public DeviceEvent {
 public:
  CudaEvent(int ordinal, cudaEvent_t event) : ordinal(ordinal), event(event) {}
  ~CudaEvent() override {
    cudaSetDevice(ordinal);
    cudaEventDestroy(event);
  }
  const int ordinal;
  const cudaEvent_t event;
};

class CudaBuffer : public DeviceBuffer {
 public:
  CudaBuffer(int ordinal, void* data, size_t size, bool pinned)
      : ordinal_(ordinal), data_(data), size_(size), pinned_(pinned) {}
  ~CudaBuffer() override {
    cudaSetDevice(ordinal_);
    pinned_ ? cudaFreeHost(data_) : cudaFree(data_);
  }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  const int ordinal_;
  void* const data_;
  const size_t size_;
  const bool pinned_;
};

class CudaGraph : public DeviceGraph {
 public:
  CudaGraph(int ordinal, cudaGraphExec_t exec) : ordinal(ordinal), exec(exec) {}
  ~CudaGraph() override {
    cudaSetDevice(ordinal);
    cudaGraphExecDestroy(exec);
  }
  const int ordinal;
  const cudaGraphExec_t exec;
};

cudaStream_t StreamOf(DeviceStream& s) {
  return static_cast<CudaStream&>(s).stream;
}
cudaEvent_t EventOf(DeviceEvent& e) { return static_cast<CudaEvent&>(e).event; }

}  // namespace

CUstream_st* CudaStreamOf(DeviceStream& stream) { return StreamOf(stream); }

absl::StatusOr<std::shared_ptr<CudaDevice>> CudaDevice::Open(int ordinal) {
  int count = 0;
  if (absl::Status s =
          CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
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
  return std::shared_ptr<CudaDevice>(new CudaDevice(
      ordinal, absl::StrCat("cuda:", ordinal, " (", prop.name, ")")));
}

absl::Status CudaDevice::MakeCurrent() const {
  return CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice");
}

absl::StatusOr<std::unique_ptr<DeviceStream>> CudaDevice::CreateStream() {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  cudaStream_t stream = nullptr;
  if (absl::Status s =
          CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags");
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaStream>(ordinal_, stream);
}

absl::StatusOr<std::unique_ptr<DeviceEvent>> CudaDevice::CreateEvent() {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  cudaEvent_t event = nullptr;
  if (absl::Status s = CudaStatus(
          // Blocking sync: the waiter threads sleep instead of spinning.
          cudaEventCreateWithFlags(
              &event, cudaEventDisableTiming | cudaEventBlockingSync),
          "cudaEventCreateWithFlags");
      !s.ok()) {
    return s;
  }
  return std::make_unique<CudaEvent>(ordinal_, event);
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
  return std::make_unique<CudaBuffer>(ordinal_, p, bytes, /*pinned=*/false);
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
  return std::make_unique<CudaBuffer>(ordinal_, p, bytes, /*pinned=*/true);
}

absl::Status CudaDevice::CopyToDevice(DeviceStream& stream, void* device_dst,
                                      const void* host_src, size_t bytes) {
  return Memcpy(stream, device_dst, host_src, bytes, cudaMemcpyHostToDevice,
                "cudaMemcpyAsync to the device");
}

absl::Status CudaDevice::CopyToHost(DeviceStream& stream, void* host_dst,
                                    const void* device_src, size_t bytes) {
  return Memcpy(stream, host_dst, device_src, bytes, cudaMemcpyDeviceToHost,
                "cudaMemcpyAsync to the host");
}

absl::Status CudaDevice::CopyOnDevice(DeviceStream& stream, void* device_dst,
                                      const void* device_src, size_t bytes) {
  return Memcpy(stream, device_dst, device_src, bytes, cudaMemcpyDeviceToDevice,
                "cudaMemcpyAsync on the device");
}

absl::Status CudaDevice::Memcpy(DeviceStream& stream, void* dst,
                                const void* src, size_t bytes, int direction,
                                const char* what) const {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(
      cudaMemcpyAsync(dst, src, bytes, static_cast<cudaMemcpyKind>(direction),
                      StreamOf(stream)),
      what);
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
  // Only faults of work already enqueued surface here, and those leave the
  // context unusable: every error from this call counts as sticky.
  return MarkSticky(
      CudaStatus(cudaEventSynchronize(EventOf(event)), "cudaEventSynchronize"));
}

bool CudaDevice::IsSticky(const absl::Status& status) const {
  return IsStickyCudaStatus(status);
}

absl::Status CudaDevice::BeginCapture(DeviceStream& stream) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(cudaStreamBeginCapture(StreamOf(stream),
                                           cudaStreamCaptureModeThreadLocal),
                    "cudaStreamBeginCapture");
}

absl::StatusOr<std::unique_ptr<DeviceGraph>> CudaDevice::EndCapture(
    DeviceStream& stream) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  cudaGraph_t graph = nullptr;
  absl::Status s = CudaStatus(cudaStreamEndCapture(StreamOf(stream), &graph),
                              "cudaStreamEndCapture");
  if (!s.ok()) return s;
  cudaGraphExec_t exec = nullptr;
  s = CudaStatus(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(graph);
  if (!s.ok()) return s;
  return std::unique_ptr<DeviceGraph>(
      std::make_unique<CudaGraph>(ordinal_, exec));
}

absl::Status CudaDevice::LaunchGraph(DeviceGraph& graph, DeviceStream& stream) {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return CudaStatus(
      cudaGraphLaunch(static_cast<CudaGraph&>(graph).exec, StreamOf(stream)),
      "cudaGraphLaunch");
}

}  // namespace coalesce
