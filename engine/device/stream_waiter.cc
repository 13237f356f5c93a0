#include "engine/device/stream_waiter.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {

StreamWaiter::StreamWaiter(Device* device, StickyHandler on_sticky)
    : device_(device),
      on_sticky_(std::move(on_sticky)),
      worker_(/*init=*/nullptr) {}

StreamWaiter::~StreamWaiter() = default;

void StreamWaiter::Add(Task task) {
  worker_.Enqueue([this, task = std::move(task)]() mutable {
    absl::Status status = Finish(task);
    if (task.completed_at != nullptr) {
      *task.completed_at = std::chrono::steady_clock::now();
    }
    task.done->Complete(std::move(status));
  });
}

absl::Status StreamWaiter::Finish(Task& task) {
  absl::Status status =
      task.previous != nullptr ? task.previous->Wait() : absl::OkStatus();
  if (status.ok()) status = task.enqueue_status;
  if (task.device_event == nullptr) return status;
  absl::Status device_status = device_->SynchronizeEvent(*task.device_event);
  if (device_status.ok()) return status;
  if (device_->IsSticky(device_status)) on_sticky_(device_status);
  if (!status.ok()) return status;
  return absl::Status(device_status.code(),
                      absl::StrCat(task.step, " on ", device_->name(), ": ",
                                   device_status.message()));
}

}  // namespace coalesce
