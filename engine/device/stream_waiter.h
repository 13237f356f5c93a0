// StreamWaiter: completes the host Events of one device stream's steps, in
// the order they were enqueued, on its own thread.
//
// Each Task names the device event recorded after the step's work (null when
// the step was never enqueued) and, optionally, the Event of the step before
// it on the same slot. The waiter waits for that previous Event, then
// synchronizes the device event (always, when one was recorded, so the
// step's memory is free once its Event completes), and completes `done` with
// the first error among: the previous step's, the enqueue's, the device's.
// Callbacks of `done` run on the waiter thread. Destruction completes every
// task already added, then joins. Add is thread-safe.
#ifndef COALESCE_ENGINE_DEVICE_STREAM_WAITER_H_
#define COALESCE_ENGINE_DEVICE_STREAM_WAITER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/cpu_stream.h"
#include "engine/device/device.h"
#include "engine/event.h"

namespace coalesce {

class StreamWaiter {
 public:
  struct Task {
    DeviceEvent* device_event = nullptr;  // null: nothing was enqueued
    absl::Status enqueue_status;
    std::shared_ptr<Event> previous;  // may be null
    std::shared_ptr<Event> done;
    std::string step;  // "copy in", for error messages
    // Set to the time `done` completes, before it does.
    std::chrono::steady_clock::time_point* completed_at = nullptr;
  };
  // Called on the waiter thread with a device error that IsSticky.
  using StickyHandler = std::function<void(const absl::Status&)>;

  StreamWaiter(Device* device, StickyHandler on_sticky);
  ~StreamWaiter();
  StreamWaiter(const StreamWaiter&) = delete;
  StreamWaiter& operator=(const StreamWaiter&) = delete;

  void Add(Task task);

 private:
  absl::Status Finish(Task& task);

  Device* const device_;
  const StickyHandler on_sticky_;
  CpuStream worker_;  // last: destroyed first, after finishing every task
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_STREAM_WAITER_H_
