// RequestQueue: the per-model queue of validated requests, one FIFO per
// priority level, each level with its own QueuePolicy.
//
// Service order: level 1 (index 0) first; within a level, requests in arrival
// order, then requests delayed by a kDelay timeout in the order they timed
// out. A priority of 0 or above priority_levels maps to the default level
// (Triton's rule). The queue also knows when the next queued request expires
// (queue timeout or deadline) and answers expired and cancelled requests via
// TakeExpired.
//
// Not thread-safe: the owner (DynamicBatcher) guards it with its mutex.
// Refs handed to a visitor stay valid until that request is taken.
#ifndef COALESCE_BATCHING_REQUEST_QUEUE_H_
#define COALESCE_BATCHING_REQUEST_QUEUE_H_

#include <cstdint>
#include <list>
#include <set>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "batching/clock.h"
#include "batching/queued_request.h"
#include "batching/scheduler_options.h"

namespace coalesce {

// The status of a request answered because its client cancelled it.
absl::Status CancelledWhileQueued();

class RequestQueue {
 public:
  using List = std::list<QueuedRequest>;
  // A queued request, as seen by ForEachInServiceOrder.
  struct Ref {
    List* list;
    List::iterator it;
  };
  // A request the queue gave up on, with the status to answer it with.
  struct Rejection {
    QueuedRequest request;
    absl::Status status;
  };

  // REQUIRES: ValidateSchedulerOptions(options) is OK.
  explicit RequestQueue(const SchedulerOptions& options);

  // Level index (0 = highest) a request of `priority` is queued at.
  uint32_t LevelFor(uint64_t priority) const;

  // OK when a request of `priority` may be pushed; Unavailable when its
  // level already holds max_queue_size requests.
  absl::Status CheckRoom(uint64_t priority) const;

  // Queues `request` at the back of its level, setting its level and queue
  // timeout from the level's policy and request->timeout.
  // REQUIRES: CheckRoom(request.request->priority) is OK.
  void Push(QueuedRequest request);

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Requests queued at each level (index 0 = highest priority).
  std::vector<size_t> LevelSizes() const;

  // Removes and returns every request whose deadline has passed
  // (DeadlineExceeded), whose kReject queue timeout has passed (Unavailable)
  // or whose sink reports cancellation (Cancelled); moves requests whose kDelay
  // timeout has passed behind their level's non-delayed requests. Scans only
  // when some request's expiry is due.
  std::vector<Rejection> TakeExpired(Clock::TimePoint now);

  // Removes and returns every request whose sink reports cancellation
  // (Cancelled), whatever its expiry. Scans the whole queue.
  std::vector<Rejection> TakeCancelled();

  // Earliest queue timeout or deadline among queued requests; max() if none.
  Clock::TimePoint NextExpiry() const;

  // Calls `visit` on queued requests in service order until it returns false.
  // `visit` must not modify the queue.
  void ForEachInServiceOrder(absl::FunctionRef<bool(const Ref&)> visit);

  // Removes the request `ref` points at and returns it.
  QueuedRequest Take(const Ref& ref);

 private:
  struct Level {
    QueuePolicy policy;
    List pending;  // Arrival order.
    List delayed;  // Timed out under kDelay, in timeout order.
  };

  static Clock::TimePoint Expiry(const QueuedRequest& request);
  // Handles the expired requests of one list; see TakeExpired.
  void ExpireList(Level& level, List& list, Clock::TimePoint now,
                  std::vector<Rejection>* rejected);

  std::vector<Level> levels_;
  uint32_t default_level_ = 0;
  size_t size_ = 0;
  std::multiset<Clock::TimePoint> expiries_;  // Expiry() of each request.
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_REQUEST_QUEUE_H_
