// LatencyTargetPolicy: issue 30's latency-target batching. Given the p99
// latency a model must meet, it chooses online how large a batch to wait for
// and how long the oldest request may wait for it, from what the batcher
// reports: arrivals (ArrivalRate), each batch's service time per instance
// (ServiceTimeModel) and each answered request's latency. docs/batching.md,
// "Latency target", gives the reasoning; in short, with
//   rate   = rows arriving per second,
//   S(b)   = predicted service time of a batch of b rows (the slowest
//            healthy instance's prediction),
//   fill(b)= (b - 1) / rate, how long b rows take to arrive,
//   L(b)   = fill(b) + 2 S(b): the first request's wait for company, the
//            batch ahead of it on the instance, and its own batch,
//   budget = target * margin (margin learned from the observed p99),
// the decision is
//   1. feasible sizes: L(b) <= budget;
//   2. among them the smallest b whose rows per second b / S(b) are within
//      5 % of the best feasible one: bigger batches that buy no throughput
//      only add latency;
//   3. at most the smallest b that serves twice the load on the healthy
//      instances (instances * b / S(b) >= 2 * rate): throughput the load
//      does not need, bought with waiting, only adds latency (at low load
//      every request goes at once); twice, so a burst of double the rate
//      finds batches that already keep up;
//   4. at least the smallest b that keeps up with the load
//      (instances * b / S(b) >= 1.1 * rate): throughput first; when no
//      size keeps up, the size of step 2 (the largest size would, where
//      2 S(max) exceeds the budget, leave no wait at all, and a free
//      instance would run whatever few rows are queued); with no feasible
//      size either, the largest;
//   5. the wait: 1.25 fill(b), capped at budget - 2 S(b) (never negative).
//   6. at most the ceiling: the largest batch the load was seen to fill
//      (below).
// The batch is formed when b rows are queued or the oldest has waited the
// wait (whichever first), holding everything queued up to max_batch_size.
//
// Ceiling: fill(b) assumes arrivals that do not depend on the answers. A
// closed loop of N clients (perf_analyzer's concurrency mode) never sends
// more than N rows while it waits, so a wait for more would always run out,
// and latency would rise to the budget for nothing. So a batch formed
// because its wait ran out, with r < b rows, sets the ceiling to r; a batch
// formed with rows left in the queue raises it to what was queued; and
// after `probe` batches in a row that reached the ceiling, it tries one
// row more (probe starts at 16 and doubles, up to 1024, each time a try
// runs out, so a steady closed loop pays for a try ever more rarely; a try
// that fills sets it back to 16).
// Before any batch has been measured there is no prediction: b = 1, no wait
// (batches form from the backlog and get measured).
//
// Margin: the p99 of each 200 answered requests is compared with the
// target. Above it, the margin shrinks in proportion, and 5 % more so that
// the next sizes land inside the band below (never below 0.25);
// below 0.85 target, it grows by 0.05 (never above 1: a budget over the
// target would choose sizes predicted to miss it). Between, it holds, so a
// constant load settles.
//
// Shedding: a request that would end after its enqueue time + target (or
// after its own deadline) even if it ran alone, starting now, can no longer
// be met: it is answered at once with DEADLINE_EXCEEDED instead of being
// run late (ShouldShed). Where a batch of one row alone takes the target or
// more, the target cannot be met at all, and only deadlines shed.
//
// Decisions are cached, and refreshed at most every 10 ms of the caller's
// clock, and only after something new was recorded (Decide). Time passing
// alone changes nothing: while a batch waits for company in a closed loop,
// no request arrives, and a rate decaying meanwhile would stretch the wait
// it is in (up to the target) instead of letting it run out. Time always comes
// from the caller: deterministic under a fake clock. Not thread-safe: the
// batcher calls it under its lock.
#ifndef COALESCE_BATCHING_LATENCY_TARGET_POLICY_H_
#define COALESCE_BATCHING_LATENCY_TARGET_POLICY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "batching/arrival_rate.h"
#include "batching/clock.h"
#include "batching/service_time_model.h"

namespace coalesce {

struct LatencyDecision {
  int batch_size = 1;       // go once this many rows are queued
  Clock::Duration wait{0};  // or once the oldest request has waited this
  // fill + 2 S(batch_size) for the chosen size; nullopt before any
  // service time was measured.
  std::optional<Clock::Duration> predicted_p99;
};

// What the metrics export.
struct LatencyTargetSnapshot {
  Clock::Duration target{0};
  double margin = 1;  // budget = target * margin
  double arrival_rows_per_second = 0;
  LatencyDecision decision;
  int ceiling = 0;  // the largest batch the load was seen to fill
  std::optional<Clock::Duration> observed_p99;  // of the last 200 answers
  uint64_t shed = 0;                            // requests shed so far
};

class LatencyTargetPolicy {
 public:
  // REQUIRES: target > 0, max_batch_size >= 1, instances >= 1.
  LatencyTargetPolicy(Clock::Duration target, int max_batch_size,
                      int instances);

  // `rows` rows arrived at `now`.
  void RecordArrival(Clock::TimePoint now, int64_t rows);
  // Instance `instance` ran a batch of `rows` rows in `took` (from the
  // batch's forming to its completion).
  void RecordBatch(int instance, int64_t rows, Clock::Duration took);
  // A request was answered `latency` after it was enqueued.
  void RecordAnswer(Clock::Duration latency);
  // A batch of `rows` rows was formed, with `rows_left` rows still queued;
  // `waited_out`: because its wait ran out before it reached the decided
  // size.
  void RecordFormed(int64_t rows, int64_t rows_left, bool waited_out);
  // Instance `instance` failed for good: its service times no longer count
  // and the load spreads over the others.
  void RetireInstance(int instance);

  // The decision for now (see the caching rule above).
  const LatencyDecision& Decide(Clock::TimePoint now);

  // Whether a request of `rows` rows enqueued at `enqueued` with `deadline`
  // should be answered DEADLINE_EXCEEDED rather than run: alone, starting
  // `now`, it would end after enqueued + target (unless that batch alone
  // takes the target or more) or after its deadline. False while no service
  // time is known.
  bool ShouldShed(Clock::TimePoint enqueued, Clock::TimePoint deadline,
                  Clock::TimePoint now, int64_t rows) const;
  void CountShed(uint64_t n) { shed_ += n; }
  // The cached decision's prediction for a batch of `rows` rows.
  std::optional<Clock::Duration> PredictService(int64_t rows) const;

  LatencyTargetSnapshot Snapshot(Clock::TimePoint now) const;
  Clock::Duration target() const { return target_; }

 private:
  // The slowest healthy instance's prediction for every size (index b - 1);
  // nullopt entries where no instance has a prediction.
  std::vector<std::optional<Clock::Duration>> PredictSizes() const;
  LatencyDecision Compute(Clock::TimePoint now) const;
  void UpdateMargin();

  const Clock::Duration target_;
  const int max_batch_size_;
  ArrivalRate arrivals_;
  std::vector<ServiceTimeModel> service_;  // by instance
  std::vector<bool> retired_;              // by instance
  std::vector<Clock::Duration> answers_;   // since the last margin update
  std::optional<Clock::Duration> observed_p99_;
  double margin_ = 1;
  uint64_t shed_ = 0;
  int ceiling_;           // see the header comment
  int filled_ = 0;        // batches in a row that reached the ceiling
  int probe_ = 16;        // fills before the ceiling tries one more
  bool probing_ = false;  // the ceiling was raised by a try
  LatencyDecision decision_;
  std::optional<Clock::TimePoint> decided_at_;
  bool changed_ = false;  // recorded something since the last decision
  // Predictions for the cached decision, reused by ShouldShed.
  std::vector<std::optional<Clock::Duration>> predicted_;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_LATENCY_TARGET_POLICY_H_
