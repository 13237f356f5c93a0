// PeriodicThread: runs a function every `interval` (on `clock`) on a thread
// of its own, from Start() until Stop() or destruction. Stop() wakes the
// thread at once and waits for a run in progress to finish; it is
// idempotent and safe before Start(). Start() is called at most once.
#ifndef COALESCE_SERVER_PERIODIC_THREAD_H_
#define COALESCE_SERVER_PERIODIC_THREAD_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"

namespace coalesce {

class PeriodicThread {
 public:
  // REQUIRES: `clock` outlives the thread.
  PeriodicThread(Clock* clock, Clock::Duration interval)
      : clock_(clock), interval_(interval) {}
  ~PeriodicThread() { Stop(); }

  void Start(std::function<void()> run);
  void Stop();

 private:
  Clock* const clock_;
  const Clock::Duration interval_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_PERIODIC_THREAD_H_
