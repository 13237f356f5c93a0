// Event: completion of one asynchronous executor step (copy in, run, copy out).
//
// An Event is created pending and completed exactly once with a Status by the
// executor that owns the step. Waiters block in Wait(); callbacks registered
// with OnComplete run exactly once, on the completing thread, or immediately on
// the caller's thread when the event is already complete. Thread-safe.
#ifndef COALESCE_ENGINE_EVENT_H_
#define COALESCE_ENGINE_EVENT_H_

#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {

class Event {
 public:
  using Callback = std::function<void(const absl::Status&)>;

  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the event complete and runs the registered callbacks.
  // REQUIRES: not yet complete.
  void Complete(absl::Status status);

  // True once Complete has been called.
  bool IsComplete() const;

  // Blocks until complete; returns the step's status.
  absl::Status Wait() const;

  // Runs `callback` with the step's status once the event is complete.
  void OnComplete(Callback callback);

 private:
  mutable absl::Mutex mu_;
  bool complete_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<Callback> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_EVENT_H_
