#include "benchmarks/coalesce_bench/clock.h"

#include <thread>

namespace coalesce::bench {
namespace {

class SteadyClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void SleepUntil(TimePoint deadline) override {
    std::this_thread::sleep_until(deadline);
  }
};

}  // namespace

Clock* RealClock() {
  static auto* clock = new SteadyClock();
  return clock;
}

}  // namespace coalesce::bench
