#include "batching/request_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

// The queue timeout of a request: the policy's default, shortened (never
// lengthened) by the request's own when the policy allows overriding. "No
// timeout" counts as infinitely long, so any request timeout shortens it.
std::optional<Clock::Duration> QueueTimeout(const QueuePolicy& policy,
                                            const InferenceRequest& request) {
  std::optional<Clock::Duration> timeout;
  if (policy.default_timeout > Clock::Duration::zero()) {
    timeout = policy.default_timeout;
  }
  if (policy.allow_timeout_override && request.timeout.has_value() &&
      *request.timeout > Clock::Duration::zero() &&
      (!timeout.has_value() || *request.timeout < *timeout)) {
    timeout = *request.timeout;
  }
  return timeout;
}

}  // namespace

absl::Status CancelledWhileQueued() {
  return absl::CancelledError("request cancelled while queued");
}

RequestQueue::RequestQueue(const SchedulerOptions& options) {
  const uint32_t count = std::max<uint32_t>(1, options.priority_levels);
  levels_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto it = options.priority_queue_policy.find(i + 1);
    levels_[i].policy = it != options.priority_queue_policy.end()
                            ? it->second
                            : options.default_queue_policy;
  }
  if (options.priority_levels > 0) {
    default_level_ = options.default_priority_level - 1;
  }
}

uint32_t RequestQueue::LevelFor(uint64_t priority) const {
  if (priority == 0 || priority > levels_.size()) return default_level_;
  return static_cast<uint32_t>(priority - 1);
}

absl::Status RequestQueue::CheckRoom(uint64_t priority) const {
  const uint32_t level = LevelFor(priority);
  const Level& l = levels_[level];
  const uint32_t max = l.policy.max_queue_size;
  if (max > 0 && l.pending.size() + l.delayed.size() >= max) {
    return absl::UnavailableError(absl::StrCat("queue of priority level ",
                                               level + 1, " is full (", max,
                                               " requests)"));
  }
  return absl::OkStatus();
}

void RequestQueue::Push(QueuedRequest request) {
  request.level = LevelFor(request.request->priority);
  Level& level = levels_[request.level];
  const std::optional<Clock::Duration> timeout =
      QueueTimeout(level.policy, *request.request);
  if (timeout.has_value()) {
    request.timeout_at = AddSaturating(request.enqueue_time, *timeout);
  }
  expiries_.insert(Expiry(request));
  level.pending.push_back(std::move(request));
  ++size_;
}

Clock::TimePoint RequestQueue::Expiry(const QueuedRequest& request) {
  return std::min(request.timeout_at, request.request->deadline);
}

Clock::TimePoint RequestQueue::NextExpiry() const {
  return expiries_.empty() ? Clock::TimePoint::max() : *expiries_.begin();
}

std::vector<RequestQueue::Rejection> RequestQueue::TakeExpired(
    Clock::TimePoint now) {
  std::vector<Rejection> rejected;
  if (NextExpiry() > now) return rejected;
  for (Level& level : levels_) {
    ExpireList(level, level.pending, now, &rejected);
    ExpireList(level, level.delayed, now, &rejected);
  }
  return rejected;
}

std::vector<RequestQueue::Rejection> RequestQueue::TakeCancelled() {
  std::vector<Rejection> rejected;
  for (Level& level : levels_) {
    for (List* list : {&level.pending, &level.delayed}) {
      for (auto it = list->begin(); it != list->end();) {
        auto current = it++;
        if (!current->request->sink->IsCancelled()) continue;
        rejected.push_back(
            Rejection{Take(Ref{list, current}), CancelledWhileQueued()});
      }
    }
  }
  return rejected;
}

void RequestQueue::ExpireList(Level& level, List& list, Clock::TimePoint now,
                              std::vector<Rejection>* rejected) {
  for (auto it = list.begin(); it != list.end();) {
    auto current = it++;
    const QueuedRequest& q = *current;
    absl::Status status;
    if (q.request->deadline <= now) {
      status = absl::DeadlineExceededError("deadline exceeded while queued");
    } else if (q.request->sink->IsCancelled()) {
      status = CancelledWhileQueued();
    } else if (q.timeout_at <= now) {
      if (level.policy.timeout_action == QueuePolicy::TimeoutAction::kReject) {
        status = absl::UnavailableError("request timed out in queue");
      } else {
        expiries_.erase(expiries_.find(Expiry(q)));
        current->timeout_at = Clock::TimePoint::max();
        expiries_.insert(Expiry(*current));
        level.delayed.splice(level.delayed.end(), list, current);
        continue;
      }
    } else {
      continue;
    }
    rejected->push_back(Rejection{Take(Ref{&list, current}), status});
  }
}

void RequestQueue::ForEachInServiceOrder(
    absl::FunctionRef<bool(const Ref&)> visit) {
  for (Level& level : levels_) {
    for (List* list : {&level.pending, &level.delayed}) {
      for (auto it = list->begin(); it != list->end(); ++it) {
        if (!visit(Ref{list, it})) return;
      }
    }
  }
}

QueuedRequest RequestQueue::Take(const Ref& ref) {
  expiries_.erase(expiries_.find(Expiry(*ref.it)));
  QueuedRequest request = std::move(*ref.it);
  ref.list->erase(ref.it);
  --size_;
  return request;
}

std::vector<size_t> RequestQueue::LevelSizes() const {
  std::vector<size_t> sizes;
  for (const Level& level : levels_) {
    sizes.push_back(level.pending.size() + level.delayed.size());
  }
  return sizes;
}

}  // namespace coalesce
