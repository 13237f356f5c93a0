#include "server/periodic_thread.h"

#include <utility>

namespace coalesce {

void PeriodicThread::Start(std::function<void()> run) {
  thread_ = std::thread([this, run = std::move(run)] {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      clock_->WaitUntil(&mu_, &cv_, AddSaturating(clock_->Now(), interval_));
      if (stop_) break;
      mu_.Unlock();
      run();
      mu_.Lock();
    }
  });
}

void PeriodicThread::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.Signal();
  if (thread_.joinable()) thread_.join();
}

}  // namespace coalesce
