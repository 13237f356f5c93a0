#include "benchmarks/coalesce_bench/arrival_schedule.h"

#include <cmath>

#include "absl/status/status.h"

namespace coalesce::bench {

absl::StatusOr<ArrivalSchedule> ArrivalSchedule::Create(
    const Options& options) {
  if (!(options.rate_per_s > 0) || !std::isfinite(options.rate_per_s)) {
    return absl::InvalidArgumentError("the request rate must be positive");
  }
  if (options.kind == ArrivalKind::kBursty &&
      (options.burst_on.count() <= 0 || options.burst_off.count() <= 0)) {
    return absl::InvalidArgumentError(
        "bursty arrivals need positive on and off periods");
  }
  if ((options.kind == ArrivalKind::kStep ||
       options.kind == ArrivalKind::kRamp) &&
      (!(options.low_fraction > 0) || options.low_fraction > 1 ||
       options.cycle.count() <= 0)) {
    return absl::InvalidArgumentError(
        "step and ramp arrivals need a low fraction in (0, 1] and a positive "
        "cycle");
  }
  return ArrivalSchedule(options);
}

ArrivalSchedule::ArrivalSchedule(const Options& options)
    : options_(options), rng_(options.seed) {}

double ArrivalSchedule::NextPoissonNs(double rate_per_ns) {
  std::exponential_distribution<double> gap(rate_per_ns);
  poisson_ns_ += gap(rng_);
  return poisson_ns_;
}

double ArrivalSchedule::CycleCount(double t) const {
  const double high = options_.rate_per_s / 1e9;  // per ns
  const double low = high * options_.low_fraction;
  const double c = static_cast<double>(options_.cycle.count());
  const double half = c / 2;
  if (options_.kind == ArrivalKind::kStep) {
    return t < half ? low * t : low * half + high * (t - half);
  }
  // Ramp: low + (high - low) * triangle(t), the triangle 0 -> 1 -> 0.
  const double rise = t < half ? t * t / c : 2 * t - t * t / c - half;
  return low * t + (high - low) * rise;
}

double ArrivalSchedule::CycleTimeOf(double count) const {
  double lo = 0, hi = static_cast<double>(options_.cycle.count());
  for (int i = 0; i < 64; ++i) {  // CycleCount increases with t
    const double mid = (lo + hi) / 2;
    (CycleCount(mid) < count ? lo : hi) = mid;
  }
  return hi;
}

std::chrono::nanoseconds ArrivalSchedule::Next() {
  const double rate_per_ns = options_.rate_per_s / 1e9;
  switch (options_.kind) {
    case ArrivalKind::kConstant: {
      const double t = static_cast<double>(count_++) / rate_per_ns;
      return std::chrono::nanoseconds(std::llround(t));
    }
    case ArrivalKind::kPoisson:
      return std::chrono::nanoseconds(std::llround(NextPoissonNs(rate_per_ns)));
    case ArrivalKind::kBursty: {
      const int64_t on = options_.burst_on.count();
      const int64_t off = options_.burst_off.count();
      const double on_time =
          NextPoissonNs(rate_per_ns * static_cast<double>(on + off) /
                        static_cast<double>(on));
      // Integer arithmetic from here, so the result is inside an on period
      // whatever the rounding: within is in [0, on).
      const int64_t t = static_cast<int64_t>(on_time);
      const int64_t cycles = t / on;
      const int64_t within = t - cycles * on;
      return std::chrono::nanoseconds(cycles * (on + off) + within);
    }
    case ArrivalKind::kStep:
    case ArrivalKind::kRamp: {
      std::exponential_distribution<double> gap(1.0);
      expected_ += gap(rng_);
      const double c = static_cast<double>(options_.cycle.count());
      const double per_cycle = CycleCount(c);
      const double cycles = std::floor(expected_ / per_cycle);
      const double t = CycleTimeOf(expected_ - cycles * per_cycle);
      return std::chrono::nanoseconds(std::llround(cycles * c + t));
    }
  }
  return std::chrono::nanoseconds(0);
}

}  // namespace coalesce::bench
