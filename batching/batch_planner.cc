#include "batching/batch_planner.h"

#include <algorithm>

namespace coalesce {
namespace {

bool IsCancelled(const RequestQueue::Ref& ref) {
  return ref.it->request->sink->IsCancelled();
}

BatchPlan PlanSingle(RequestQueue& queue) {
  BatchPlan plan;
  queue.ForEachInServiceOrder([&plan](const RequestQueue::Ref& ref) {
    if (IsCancelled(ref)) {
      plan.cancelled.push_back(ref);
      return true;
    }
    plan.members.push_back(ref);
    plan.batch_size = ref.it->layout.batch_size;
    plan.ready = true;
    return false;
  });
  return plan;
}

// Adds candidates to a plan in service order, following the header's rules.
class BatchCollector {
 public:
  BatchCollector(const BatchingPolicy& policy, BatchPlan* plan)
      : policy_(policy), plan_(*plan) {}

  // Returns whether to keep visiting.
  bool Add(const RequestQueue::Ref& ref) {
    const QueuedRequest& q = *ref.it;
    if (IsCancelled(ref)) {
      plan_.cancelled.push_back(ref);
      return true;
    }
    if (item_shapes_ != nullptr && q.layout.item_shapes != *item_shapes_) {
      return true;  // Different shapes never merge; it waits for later.
    }
    if (plan_.batch_size + q.layout.batch_size > policy_.max_batch_size) {
      blocked_ = true;  // Never split a request: the batch ends here.
      return false;
    }
    item_shapes_ = &q.layout.item_shapes;
    plan_.members.push_back(ref);
    plan_.batch_size += q.layout.batch_size;
    oldest_ = std::min(oldest_, q.enqueue_time);
    const auto& preferred = policy_.preferred_batch_sizes;
    if (std::find(preferred.begin(), preferred.end(), plan_.batch_size) !=
        preferred.end()) {
      preferred_count_ = plan_.members.size();
      preferred_size_ = plan_.batch_size;
    }
    return plan_.batch_size < policy_.max_batch_size;
  }

  // The next candidate did not fit: waiting cannot grow the batch.
  bool blocked() const { return blocked_; }
  bool full() const { return plan_.batch_size == policy_.max_batch_size; }
  Clock::TimePoint oldest() const { return oldest_; }
  // Members up to the largest preferred size reached (0 = none reached).
  size_t preferred_count() const { return preferred_count_; }
  int64_t preferred_size() const { return preferred_size_; }

 private:
  const BatchingPolicy& policy_;
  BatchPlan& plan_;
  const std::vector<Shape>* item_shapes_ = nullptr;
  Clock::TimePoint oldest_ = Clock::TimePoint::max();
  bool blocked_ = false;
  size_t preferred_count_ = 0;
  int64_t preferred_size_ = 0;
};

}  // namespace

BatchingPolicy BatchingPolicy::FromOptions(const SchedulerOptions& options) {
  BatchingPolicy policy;
  policy.max_batch_size = options.max_batch_size;
  policy.dynamic_batching = options.dynamic_batching;
  policy.preferred_batch_sizes = options.preferred_batch_sizes;
  policy.max_queue_delay = options.max_queue_delay;
  return policy;
}

BatchPlan PlanBatch(RequestQueue& queue, const BatchingPolicy& policy,
                    Clock::TimePoint now, bool drain) {
  if (!policy.merges()) return PlanSingle(queue);
  BatchPlan plan;
  BatchCollector collector(policy, &plan);
  queue.ForEachInServiceOrder([&collector](const RequestQueue::Ref& ref) {
    return collector.Add(ref);
  });
  if (plan.members.empty()) return plan;
  const Clock::TimePoint delay_end =
      AddSaturating(collector.oldest(), policy.max_queue_delay);
  const bool big_enough =
      policy.ready_batch_size > 0 && plan.batch_size >= policy.ready_batch_size;
  if (collector.full() || drain || now >= delay_end || big_enough) {
    plan.ready = true;  // Everything collected.
    plan.waited_out = !collector.full() && !drain && !big_enough &&
                      policy.max_queue_delay > Clock::Duration::zero();
  } else if (collector.preferred_count() > 0) {
    // Cut at the largest preferred size reached, also when blocked.
    plan.members.resize(collector.preferred_count());
    plan.batch_size = collector.preferred_size();
    plan.ready = true;
  } else if (collector.blocked()) {
    plan.ready = true;
  } else {
    plan.ready_at = delay_end;
  }
  return plan;
}

}  // namespace coalesce
