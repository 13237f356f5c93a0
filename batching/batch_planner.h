// PlanBatch: decides which queued requests form the next batch and whether it
// should go now, following Triton's dynamic batcher rules.
//
// Candidates are visited in the queue's service order (priority, then arrival).
// The first live candidate fixes the batch's item shapes; candidates with
// other shapes are skipped and stay queued for a later batch. Candidates are
// added while their whole batch dim fits in max_batch_size; the first one that
// does not fit ends the batch. Cancelled candidates are reported instead.
//
// The batch is ready at once, with every member collected, when
//   - its size == max_batch_size,
//   - or the oldest member has waited max_queue_delay (0 = always),
//   - or its size reached ready_batch_size (when > 0: the latency-target
//     policy's choice, latency_target_policy.h),
//   - or `drain` is set (shutdown: nothing more will arrive).
// Otherwise, if its size prefix reached a preferred batch size, it is ready
// at once cut at the largest preferred size reached (the rest stays queued,
// in order); this also holds when the next candidate did not fit (Triton).
// Otherwise, if the next candidate did not fit (waiting cannot grow it), it
// is ready at once with every member. Otherwise it becomes ready at the
// oldest member's enqueue time + delay.
// Without batching (max_batch_size 0 or dynamic_batching off) the batch is
// the first live request alone, ready at once.
//
// Pure with respect to the queue: nothing is taken; the caller takes
// `members` (and answers `cancelled`) under the same lock.
#ifndef COALESCE_BATCHING_BATCH_PLANNER_H_
#define COALESCE_BATCHING_BATCH_PLANNER_H_

#include <cstdint>
#include <vector>

#include "batching/clock.h"
#include "batching/request_queue.h"
#include "batching/scheduler_options.h"

namespace coalesce {

struct BatchingPolicy {
  int max_batch_size = 0;
  bool dynamic_batching = false;
  std::vector<int> preferred_batch_sizes;
  Clock::Duration max_queue_delay{0};
  int ready_batch_size = 0;  // 0 = none

  static BatchingPolicy FromOptions(const SchedulerOptions& options);
  bool merges() const { return max_batch_size > 0 && dynamic_batching; }
};

struct BatchPlan {
  std::vector<RequestQueue::Ref> members;    // Service order.
  std::vector<RequestQueue::Ref> cancelled;  // Seen while planning.
  int64_t batch_size = 0;                    // Sum of members' rows.
  bool ready = false;
  // Ready only because the oldest member waited max_queue_delay (> 0):
  // neither full, nor at ready_batch_size or a preferred size.
  bool waited_out = false;
  // When not ready (and members non-empty): when the delay expires.
  Clock::TimePoint ready_at = Clock::TimePoint::max();
};

BatchPlan PlanBatch(RequestQueue& queue, const BatchingPolicy& policy,
                    Clock::TimePoint now, bool drain);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_BATCH_PLANNER_H_
