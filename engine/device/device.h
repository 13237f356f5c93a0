// Device: the narrow interface through which a pipelined executor reaches an
// accelerator: memory, copies, streams, events. Two implementations: CUDA
// (the plugin, engine/cuda/) and SimulatedDevice (simulated_device.h), which
// runs the same pipeline logic in CI without a GPU. Computation is enqueued by
// a DeviceProgram (device_program.h) bound to one implementation.
//
// Semantics follow CUDA's:
//   - Work enqueued on one stream runs in order; streams run concurrently.
//   - RecordEvent(e, s) marks the point reached by the work enqueued on s so
//     far; StreamWaitEvent(s2, e) makes later work on s2 wait for that point;
//     SynchronizeEvent(e) blocks the calling thread until it is reached.
//     Re-recording an event moves its point; waits use the point recorded
//     before they were called.
//   - An enqueue call that returns an error enqueued nothing, and the device
//     is still usable (a bad launch configuration, say).
//   - A fault while work runs is sticky (IsSticky): from then on every call
//     on the device fails, and everything using it must be rebuilt.
//   - Out of device or pinned memory is ResourceExhausted.
// Every method is thread-safe. Streams, events and buffers must not outlive
// their Device.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coalesce {

// A queue of device work (cudaStream_t on CUDA). Opaque.
class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
};

// A point in a stream's work (cudaEvent_t, timing disabled, on CUDA). Opaque.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

// Work captured from a stream, replayable as one launch (cudaGraphExec_t on
// CUDA). Opaque.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
};

// Device memory, or page-locked host memory; freed when destroyed.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // For logs and error messages: "cuda:0 (NVIDIA H100)", "simulated".
  virtual std::string name() const = 0;

  virtual absl::StatusOr<std::unique_ptr<DeviceStream>> CreateStream() = 0;
  virtual absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent() = 0;
  // ResourceExhausted when the memory is not there. Allocation may block
  // the device (cudaMallocHost does): allocate once and reuse.
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateDevice(
      size_t bytes) = 0;
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocatePinnedHost(
      size_t bytes) = 0;

  // Asynchronous copies, enqueued on `stream`. `host` must be pinned memory
  // from AllocatePinnedHost for the copy to overlap other work.
  virtual absl::Status CopyToDevice(DeviceStream& stream, void* device_dst,
                                    const void* host_src, size_t bytes) = 0;
  virtual absl::Status CopyToHost(DeviceStream& stream, void* host_dst,
                                  const void* device_src, size_t bytes) = 0;
  // Device memory to device memory (Identity, Reshape, Concat), on `stream`.
  virtual absl::Status CopyOnDevice(DeviceStream& stream, void* device_dst,
                                    const void* device_src, size_t bytes) = 0;

  virtual absl::Status RecordEvent(DeviceEvent& event,
                                   DeviceStream& stream) = 0;
  virtual absl::Status StreamWaitEvent(DeviceStream& stream,
                                       DeviceEvent& event) = 0;
  // Blocks until the event's recorded point is reached. Returns the device's
  // sticky error if the work before it faulted.
  virtual absl::Status SynchronizeEvent(DeviceEvent& event) = 0;

  // True when `status` came from this device and reports a sticky fault.
  virtual bool IsSticky(const absl::Status& status) const = 0;

  // Stream capture (CUDA graphs). Between BeginCapture and EndCapture, work
  // enqueued on `stream` is recorded, not run; EndCapture returns it as a
  // graph that LaunchGraph enqueues whole, on any stream, any number of
  // times, with the same memory addresses. Events may not be recorded or
  // waited on a capturing stream. Nothing may allocate device memory during
  // a capture. Unimplemented where the device has no graphs.
  virtual absl::Status BeginCapture(DeviceStream& stream) {
    return absl::UnimplementedError("no graph capture on this device");
  }
  virtual absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(
      DeviceStream& stream) {
    return absl::UnimplementedError("no graph capture on this device");
  }
  virtual absl::Status LaunchGraph(DeviceGraph& graph, DeviceStream& stream) {
    return absl::UnimplementedError("no graph capture on this device");
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_H_
