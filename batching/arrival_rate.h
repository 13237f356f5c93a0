// ArrivalRate: requests per second arriving at a model, exponentially
// weighted over about `time_constant`, for issue 30's latency-target
// batching (docs/batching.md, "Latency target"): how fast a batch fills
// decides how long waiting for it costs.
//
// Each arrival after the first adds one to a sum that decays as
// exp(-age / tau); the rate is that sum over the decayed time observed since
// the first arrival, tau * (1 - exp(-elapsed / tau)): tau once the estimator
// has run a few tau, less before, so the first requests do not read as a low
// rate. One arrival alone gives no rate (0). With tau = 250 ms, a step in the
// rate is 98 % followed after 1 s (4 tau). No arrival for a while reads as a
// decaying rate, down to 0.
//
// Time comes from the caller (the batcher's injected clock), so tests are
// deterministic. Not thread-safe: its owner calls it under its own lock;
// time points must not decrease from call to call.
#ifndef COALESCE_BATCHING_ARRIVAL_RATE_H_
#define COALESCE_BATCHING_ARRIVAL_RATE_H_

#include <chrono>
#include <optional>

#include "batching/clock.h"

namespace coalesce {

class ArrivalRate {
 public:
  // REQUIRES: time_constant > 0.
  explicit ArrivalRate(
      Clock::Duration time_constant = std::chrono::milliseconds(250));

  // `requests` arrived at `now`.
  void Record(Clock::TimePoint now, int requests = 1);

  // The rate at `now`, requests per second; 0 before the second arrival.
  double PerSecond(Clock::TimePoint now) const;

 private:
  // exp(-(to - from) / tau).
  double Decay(Clock::TimePoint from, Clock::TimePoint to) const;

  const double tau_s_;
  std::optional<Clock::TimePoint> first_;
  Clock::TimePoint last_{};
  double sum_ = 0;  // decayed arrivals as of last_
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_ARRIVAL_RATE_H_
