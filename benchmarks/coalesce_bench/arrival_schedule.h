// ArrivalSchedule: when an open-loop load generator sends each request.
//
// A schedule yields the send times of successive requests as offsets from
// the start of a load level. It is a pure, seeded sequence (no clock): the
// same options and seed give the same offsets, so tests check it exactly.
//   constant  offset_k = round(k / rate), k = 0, 1, ...: no drift.
//   poisson   exponential gaps with mean 1/rate (std::mt19937_64).
//   bursty    on/off cycles of burst_on then burst_off. Arrivals are a
//             Poisson process in "on time" at rate * (on + off) / on, mapped
//             onto the on periods, so nothing is ever sent while off and the
//             mean rate over whole cycles is still `rate`.
//   step      cycles of `cycle`: the first half at low_fraction * rate,
//             the second at `rate` (a load step up, then down).
//   ramp      cycles of `cycle`: the rate climbs linearly from
//             low_fraction * rate to `rate` over the first half and back
//             down over the second.
//             Both are Poisson processes with that varying rate: the
//             cumulative expected count is inverted (bisection) at sums of
//             exponential gaps. Their mean rate is (1 + low_fraction) / 2
//             * rate: the level names the peak.
// Not thread-safe: one schedule per sending thread.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_ARRIVAL_SCHEDULE_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_ARRIVAL_SCHEDULE_H_

#include <chrono>
#include <cstdint>
#include <random>

#include "absl/status/statusor.h"
#include "benchmarks/coalesce_bench/options.h"

namespace coalesce::bench {

class ArrivalSchedule {
 public:
  struct Options {
    ArrivalKind kind = ArrivalKind::kPoisson;
    double rate_per_s = 1;  // mean requests per second, > 0
    std::chrono::nanoseconds burst_on{std::chrono::milliseconds(100)};
    std::chrono::nanoseconds burst_off{std::chrono::milliseconds(100)};
    double low_fraction = 0.1;  // step/ramp, in (0, 1]
    std::chrono::nanoseconds cycle{std::chrono::seconds(4)};  // step/ramp
    uint64_t seed = 1;
  };

  // InvalidArgument when the rate is not positive and finite, (bursty)
  // when an on or off period is not positive, or (step, ramp) when the low
  // fraction is outside (0, 1] or the cycle is not positive.
  static absl::StatusOr<ArrivalSchedule> Create(const Options& options);

  // The offset of the next request from the start; non-decreasing.
  std::chrono::nanoseconds Next();

 private:
  explicit ArrivalSchedule(const Options& options);

  // Next time of a Poisson process at `rate_per_ns`, as a double so that
  // rounding never accumulates.
  double NextPoissonNs(double rate_per_ns);
  // Step and ramp: expected arrivals from a cycle's start to `t` ns into
  // it, and the time into the cycle where that count reaches `count`.
  double CycleCount(double t) const;
  double CycleTimeOf(double count) const;

  Options options_;
  std::mt19937_64 rng_;
  int64_t count_ = 0;      // constant: requests issued so far
  double poisson_ns_ = 0;  // poisson/bursty: time of the last arrival
  double expected_ = 0;    // step/ramp: expected count at the last arrival
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_ARRIVAL_SCHEDULE_H_
