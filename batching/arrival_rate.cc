#include "batching/arrival_rate.h"

#include <algorithm>
#include <cmath>

namespace coalesce {
namespace {

double Seconds(Clock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

ArrivalRate::ArrivalRate(Clock::Duration time_constant)
    : tau_s_(std::max(1e-9, Seconds(time_constant))) {}

double ArrivalRate::Decay(Clock::TimePoint from, Clock::TimePoint to) const {
  return std::exp(-std::max(0.0, Seconds(to - from)) / tau_s_);
}

void ArrivalRate::Record(Clock::TimePoint now, int requests) {
  if (!first_) {
    // The first arrival opens the window: a rate is arrivals after it over
    // the time since it.
    first_ = now;
    last_ = now;
    requests -= 1;
  }
  sum_ = sum_ * Decay(last_, now) + requests;
  last_ = std::max(last_, now);
}

double ArrivalRate::PerSecond(Clock::TimePoint now) const {
  if (!first_) return 0;
  // The decayed length of time observed: tau once it is long, shorter at
  // the start.
  const double observed = tau_s_ * (1.0 - Decay(*first_, now));
  if (observed <= 0) return 0;
  return sum_ * Decay(last_, now) / observed;
}

}  // namespace coalesce
