#include "batching/clock.h"

#include <thread>

#include "absl/time/time.h"

namespace coalesce {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }

  void WaitUntil(absl::Mutex* mu, absl::CondVar* cv,
                 TimePoint deadline) override {
    if (deadline == TimePoint::max()) {
      cv->Wait(mu);
      return;
    }
    const Duration remaining = deadline - Now();
    if (remaining <= Duration::zero()) return;
    cv->WaitWithTimeout(mu, absl::FromChrono(remaining));
  }

  void SleepUntil(TimePoint deadline) override {
    std::this_thread::sleep_until(deadline);
  }
};

}  // namespace

Clock* RealClock() {
  static Clock* const clock = new SteadyClock();
  return clock;
}

Clock::TimePoint AddSaturating(Clock::TimePoint t, Clock::Duration d) {
  if (t == Clock::TimePoint::max()) return t;
  if (d >= Clock::TimePoint::max() - t) return Clock::TimePoint::max();
  return t + d;
}

}  // namespace coalesce
