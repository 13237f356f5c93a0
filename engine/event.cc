#include "engine/event.h"

#include <utility>

namespace coalesce {

void Event::Complete(absl::Status status) {
  std::vector<Callback> callbacks;
  {
    absl::MutexLock lock(&mu_);
    complete_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
  }
  for (auto& callback : callbacks) callback(status);
}

bool Event::IsComplete() const {
  absl::MutexLock lock(&mu_);
  return complete_;
}

absl::Status Event::Wait() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&complete_));
  return status_;
}

void Event::OnComplete(Callback callback) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (!complete_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
    status = status_;
  }
  callback(status);
}

}  // namespace coalesce
