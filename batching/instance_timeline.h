// InstanceTimeline: where one executor instance's wall time went, split into
// exclusive states that add up to the time since the instance started.
//
// States, from the instance's point of view:
//   computing        some batch of this instance was running;
//   copying_in       none was running, some batch was being gathered or
//                    copied to the device;
//   copying_out      none was running or copying in, some batch was being
//                    copied back or scattered into its responses;
//   blocked_pipeline batches held this instance's slots while none of the
//                    above happened (waiting for completion to be noticed,
//                    for a previous batch in the stream, for a free thread);
//   idle_assembling  no batch in flight while requests were queued: the
//                    batcher was waiting out its delay or filling a batch;
//   idle_empty_queue no batch in flight and the model's queue empty.
// Overlap resolves in that order, so with double buffering a copy hidden
// behind compute counts as computing, and copying_* is the copy time that
// compute did not hide.
//
// The batcher reports three kinds of events: the queue turning empty or
// non-empty, a batch taking a slot, a batch releasing it with the intervals
// of its steps. Time before the oldest batch still in flight is final and
// only grows, so the totals are monotonic counters; a batch in flight is
// accounted when it releases its slot.
//
// Not thread-safe: the batcher calls it under its lock. Time points must not
// decrease from call to call.
#ifndef COALESCE_BATCHING_INSTANCE_TIMELINE_H_
#define COALESCE_BATCHING_INSTANCE_TIMELINE_H_

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "batching/clock.h"

namespace coalesce {

// In priority order (see above).
enum class InstanceState {
  kComputing,
  kCopyingIn,
  kCopyingOut,
  kBlockedPipeline,
  kIdleAssembling,
  kIdleEmptyQueue,
};
inline constexpr int kInstanceStates = 6;

// "computing", "copying_in", ...: the metric label value.
const char* InstanceStateName(InstanceState state);

// Time spent in each state, indexed by InstanceState.
struct InstanceStateTotals {
  std::array<Clock::Duration, kInstanceStates> time{};

  Clock::Duration operator[](InstanceState s) const {
    return time[static_cast<int>(s)];
  }
  Clock::Duration Total() const;
};

// [begin, end) of one step of a batch; empty when end <= begin.
struct TimeInterval {
  Clock::TimePoint begin;
  Clock::TimePoint end;
};

// The steps of one batch on the batcher's clock.
struct BatchIntervals {
  TimeInterval gather, copy_in, run, copy_out, scatter;
};

class InstanceTimeline {
 public:
  // Starts idle at `start`, the queue empty.
  explicit InstanceTimeline(Clock::TimePoint start);

  // The model's queue is `empty` from `now` on. Cheap when nothing changed.
  void QueueChanged(Clock::TimePoint now, bool empty);

  // A batch took one of this instance's slots at `now`; returns its ticket.
  uint64_t BatchTaken(Clock::TimePoint now);

  // The batch `ticket` released its slot at `now`; its steps' intervals are
  // clipped to the time it held the slot.
  void BatchReleased(uint64_t ticket, Clock::TimePoint now,
                     const BatchIntervals& steps);

  // The final totals, plus the current idle stretch up to `now` when no
  // batch is in flight.
  InstanceStateTotals Totals(Clock::TimePoint now) const;

 private:
  struct Step {
    TimeInterval interval;
    InstanceState state;
  };

  InstanceState IdleState() const;
  // Accounts [final_until_, until) while batches were in flight.
  void FinalizeBusy(Clock::TimePoint until);

  InstanceStateTotals totals_;
  Clock::TimePoint final_until_;  // Everything before is in totals_.
  bool queue_empty_ = true;
  uint64_t next_ticket_ = 0;
  // (ticket, taken at) of each batch in flight, in ticket order: at most
  // one per slot, so a vector that, once grown, allocates no more.
  std::vector<std::pair<uint64_t, Clock::TimePoint>> in_flight_;
  std::vector<Step> pending_;  // Steps of released batches not yet final.
  std::vector<Clock::TimePoint> cuts_;  // FinalizeBusy's, reused
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_INSTANCE_TIMELINE_H_
