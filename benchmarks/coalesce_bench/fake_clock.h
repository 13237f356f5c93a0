// FakeClock (tests only): a Clock whose time moves only when someone sleeps
// on it or calls Advance. SleepUntil(t) jumps time to t at once, after
// running an optional hook that sees the interval being slept through (tests
// use it to inject completions "during" that interval). Thread-safe.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_FAKE_CLOCK_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_FAKE_CLOCK_H_

#include <functional>

#include "absl/synchronization/mutex.h"
#include "benchmarks/coalesce_bench/clock.h"

namespace coalesce::bench {

class FakeClock : public Clock {
 public:
  using Hook = std::function<void(TimePoint from, TimePoint to)>;

  TimePoint Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void SleepUntil(TimePoint deadline) override {
    const TimePoint from = Now();
    if (deadline <= from) return;
    if (on_sleep_) on_sleep_(from, deadline);
    absl::MutexLock lock(&mu_);
    if (deadline > now_) now_ = deadline;
  }

  void Advance(std::chrono::nanoseconds d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

  // REQUIRES: set before the clock is shared with other threads.
  void set_on_sleep(Hook hook) { on_sleep_ = std::move(hook); }

 private:
  mutable absl::Mutex mu_;
  TimePoint now_ ABSL_GUARDED_BY(mu_) = TimePoint() + std::chrono::hours(1);
  Hook on_sleep_;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_FAKE_CLOCK_H_
