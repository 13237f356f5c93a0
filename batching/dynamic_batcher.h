// DynamicBatcher: one model's scheduler. Queues validated requests, merges
// them into batches the way Triton's dynamic batcher does (see
// batch_planner.h and docs/batching.md), and runs each batch on a free
// BatchSlot of one of its ExecutorInstances.
//
// Threading: Enqueue, Shutdown and Stats may be called from any thread
// (Enqueue never blocks on the queue). Batches are formed only while some
// slot is free. A batch that is ready at once and small (inputs of at most
// 64 KiB in all) is formed and gathered on the thread that made it possible:
// Enqueue's caller, or the thread that frees a slot (an executor thread),
// since handing it to another thread would cost more than the copy. One
// scheduler thread per batcher forms every other batch (those that wait for
// max_queue_delay, large ones, those during Shutdown) and answers expired and
// cancelled requests. A batch whose slot is not ReadyFor its shapes
// (engine/executor.h: the first batches of a shape on a device bind a plan,
// grow buffers, capture a graph) is gathered and submitted on its
// instance's setup thread instead, whichever thread formed it: device setup
// never runs on an enqueuing, completing or scheduler thread, and never
// holds up the other instances. Each batch's outputs are scattered and its
// requests answered on the thread that completes its CopyOut event (an executor
// thread, or Enqueue's caller when a step fails at once). Every sink's
// Finish is called exactly once, never with the batcher's lock held.
//
// Instance health: after a batch fails, an instance whose health()
// reports a sticky fault gets no more batches (its slots are retired); the
// queue is shared, so waiting requests go to the healthy instances. When no
// instance is healthy, every queued request and every new one fails at once
// with UNAVAILABLE naming the faults, and Health() says so (the server's
// readiness follows it).
//
// Latency target (options.latency_target > 0): the batch size to wait for
// and the wait come from a LatencyTargetPolicy fed with this batcher's
// arrivals, service times and answers, instead of preferred_batch_sizes
// and max_queue_delay; a request that would end after its enqueue time +
// target, or after its deadline, when its batch is formed is answered
// DEADLINE_EXCEEDED at once instead of run late.
//
// Ownership: the batcher owns its executor instances; it owns each request
// from a successful Enqueue until the request's Finish returns.
#ifndef COALESCE_BATCHING_DYNAMIC_BATCHER_H_
#define COALESCE_BATCHING_DYNAMIC_BATCHER_H_

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "batching/batch_assembler.h"
#include "batching/batch_planner.h"
#include "batching/clock.h"
#include "batching/inference_request.h"
#include "batching/instance_timeline.h"
#include "batching/latency_target_policy.h"
#include "batching/model_stats.h"
#include "batching/request_queue.h"
#include "batching/request_validator.h"
#include "batching/scheduler_options.h"
#include "engine/cpu_stream.h"
#include "engine/executor.h"

namespace coalesce {

class DynamicBatcher {
 public:
  // InvalidArgument (or Unimplemented) when ValidateSchedulerOptions fails,
  // when `instances` is empty or holds a null or slot-less instance.
  // Starts the scheduler thread.
  static absl::StatusOr<std::unique_ptr<DynamicBatcher>> Create(
      const SchedulerOptions& options,
      std::vector<std::unique_ptr<ExecutorInstance>> instances);

  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Shutdown(), then destroys the executor instances.
  ~DynamicBatcher();

  // Validates `*request` against the options and queues it. On OK takes
  // *request; its sink's Finish is called exactly once later. On error leaves
  // *request untouched for the caller to answer:
  //   InvalidArgument naming the tensor (see RequestValidator::Validate), or a
  //     null request or sink;
  //   Unavailable when the request's priority level holds max_queue_size
  //     requests, or after Shutdown began.
  absl::Status Enqueue(std::unique_ptr<InferenceRequest>* request);

  // Tells the batcher that some queued request's sink may now report
  // IsCancelled(): wakes the scheduler, which answers every queued request
  // whose sink is cancelled with Cancelled (it never executes) and frees its
  // queue place. Requests already in a batch are not affected. Cheap (takes
  // the lock only to set a flag) and never calls a sink on the caller's
  // thread; any thread, any number of times, also after Shutdown (no-op).
  // The frontend calls it from its cancellation callback, after the sink
  // starts reporting IsCancelled().
  void NotifyCancelled();

  // Stops accepting requests, runs everything queued (without waiting for
  // max_queue_delay), and waits for all in-flight batches to be answered.
  // Idempotent; every caller blocks until drained.
  // REQUIRES: not called from a ResponseSink callback.
  void Shutdown();

  ModelStatsSnapshot Stats() const;

  // Requests waiting in the queue now (not yet in a batch), in all and by
  // priority level (index 0 = highest).
  int64_t QueuedRequests() const;
  std::vector<size_t> QueuedRequestsByLevel() const;

  // Batches handed to an executor instance and not yet answered.
  int InFlightBatches() const;

  // Per executor instance, in creation order: where its time went since the
  // batcher started (instance_timeline.h).
  std::vector<InstanceStateTotals> InstanceStates() const;

  // Per executor instance, in creation order: OK, or the fault it failed
  // with (it runs no more batches).
  std::vector<absl::Status> InstanceHealth() const;

  // Per executor instance, in creation order: batches handed to its setup
  // thread because their slot was not ReadyFor them (see above).
  std::vector<int64_t> SetupBatches() const;

  // OK while some instance is healthy; else UNAVAILABLE naming each fault.
  absl::Status Health() const;

  // The latency-target policy's state; nullopt without a latency target.
  std::optional<LatencyTargetSnapshot> LatencyTarget() const;

 private:
  struct SlotRef {
    ExecutorInstance* instance;
    BatchSlot* slot;
    int instance_index;
  };
  struct Batch;
  // What the scheduler thread does next, outside the lock.
  struct Work {
    std::vector<RequestQueue::Rejection> rejected;
    std::shared_ptr<Batch> batch;
    bool exit = false;
  };

  DynamicBatcher(const SchedulerOptions& options,
                 std::vector<std::unique_ptr<ExecutorInstance>> instances);

  // Queues the request; sets *batch when a batch may be formed on the
  // caller's thread (TakeInlineBatch), and *wake_scheduler when the
  // scheduler thread has work (SchedulerHasWork).
  absl::Status Admit(std::unique_ptr<InferenceRequest>* request,
                     RequestLayout layout, std::shared_ptr<Batch>* batch,
                     bool* wake_scheduler);
  // The batch to form on this thread now, or null when the scheduler thread
  // is to decide: see the threading note above.
  std::shared_ptr<Batch> TakeInlineBatch(Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether waking the scheduler thread now would find it something to do:
  // a batch to form or wait for, a request expiring before it would wake, a
  // cancellation scan, or Shutdown. Signalling only then keeps requests that
  // arrive while every slot is busy from waking it for nothing.
  bool SchedulerHasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SchedulerLoop();
  Work AwaitWork();
  std::vector<RequestQueue::Rejection> TakeRejections(Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<Batch> TakeBatch(const BatchPlan& plan, Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rules to plan with now: policy_, or with a latency target, the
  // policy's current decision.
  const BatchingPolicy& PolicyNow(Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With a latency target: takes the members of a ready `plan` that would
  // miss the target or their deadline (see above) out of the queue.
  std::vector<RequestQueue::Rejection> TakeLate(const BatchPlan& plan,
                                                Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gathers and submits `batch` on this thread when its slot is ReadyFor
  // its shapes, else hands it to its instance's setup thread.
  void Execute(std::shared_ptr<Batch> batch);
  void GatherAndSubmit(const std::shared_ptr<Batch>& batch,
                       const std::vector<Shape>& shapes);
  // Instance i's setup thread, started on first use; counts a batch.
  CpuStream& SetupThread(int i);
  void CompleteBatch(Batch& batch, absl::Status status);
  void AnswerBatch(Batch& batch);
  void FailRequest(QueuedRequest& request, const absl::Status& status,
                   FailureReason reason);
  void ReleaseSlot(const Batch& batch, const BatchIntervals& steps);
  // Tells the latency-target policy (if any) how `batch` went.
  void LearnFrom(const Batch& batch, Clock::TimePoint done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every instance's timeline whether the queue is empty now.
  void NoteQueue(Clock::TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Retires instance i (its free slots go) after `fault`; when no instance
  // is left, returns every queued request, failed with HealthLocked().
  std::vector<RequestQueue::Rejection> RetireInstance(int i, absl::Status fault,
                                                      Clock::TimePoint now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status HealthLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SchedulerOptions options_;
  Clock* const clock_;
  const RequestValidator validator_;
  const BatchAssembler assembler_;
  const BatchingPolicy policy_;
  ModelStats stats_;

  mutable absl::Mutex mu_;
  // Wakes the scheduler: request, free slot, cancellation, shutdown.
  absl::CondVar cv_;
  RequestQueue queue_ ABSL_GUARDED_BY(mu_);
  std::deque<SlotRef> free_slots_ ABSL_GUARDED_BY(mu_);
  std::vector<InstanceTimeline> timelines_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> health_ ABSL_GUARDED_BY(mu_);  // by instance
  int healthy_ ABSL_GUARDED_BY(mu_) = 0;  // instances with an OK health_
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // When the sleeping scheduler thread wakes by itself; max() while it runs
  // (it then rechecks everything under mu_ before it sleeps again).
  Clock::TimePoint scheduler_wakes_at_ ABSL_GUARDED_BY(mu_) =
      Clock::TimePoint::max();
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Set by NotifyCancelled: the scheduler scans the queue for cancellations.
  bool cancel_scan_pending_ ABSL_GUARDED_BY(mu_) = false;
  // With a latency target only.
  std::optional<LatencyTargetPolicy> target_ ABSL_GUARDED_BY(mu_);
  BatchingPolicy adaptive_ ABSL_GUARDED_BY(mu_);  // what PolicyNow returns

  std::once_flag shutdown_once_;
  std::thread scheduler_;
  // Declared last so it is destroyed first: executor threads that may still
  // be inside a completion callback are joined while mu_ is alive.
  std::vector<std::unique_ptr<ExecutorInstance>> instances_;
  // By instance; null until its first batch that needs setup. Declared
  // after instances_, so joined before they are destroyed.
  mutable absl::Mutex setup_mu_;
  std::vector<std::unique_ptr<CpuStream>> setup_threads_
      ABSL_GUARDED_BY(setup_mu_);
  std::vector<int64_t> setup_batches_ ABSL_GUARDED_BY(setup_mu_);
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_DYNAMIC_BATCHER_H_
