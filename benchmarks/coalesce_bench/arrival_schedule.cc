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
  return ArrivalSchedule(options);
}

ArrivalSchedule::ArrivalSchedule(const Options& options)
    : options_(options), rng_(options.seed) {}

double ArrivalSchedule::NextPoissonNs(double rate_per_ns) {
  std::exponential_distribution<double> gap(rate_per_ns);
  poisson_ns_ += gap(rng_);
  return poisson_ns_;
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
  }
  return std::chrono::nanoseconds(0);
}

}  // namespace coalesce::bench
