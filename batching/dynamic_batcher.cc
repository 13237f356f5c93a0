#include "batching/dynamic_batcher.h"

#include <algorithm>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace coalesce {
namespace {

// The failure reason of a request refused at admission or dropped from the
// queue.
FailureReason ReasonOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
      return FailureReason::kCanceled;
    case absl::StatusCode::kDeadlineExceeded:
      return FailureReason::kTimedOut;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
      return FailureReason::kRejected;
    default:
      return FailureReason::kOther;
  }
}

// Batches whose inputs total at most this many bytes are formed and gathered
// on the thread that makes them possible instead of on the scheduler thread
// (see the header): waking another thread costs more than copying this much.
constexpr size_t kInlineBatchBytes = 64 << 10;

// Set while this thread is inside DynamicBatcher::Execute. A batch that
// completes synchronously within Execute (a gather or enqueue failure, a fake
// executor) releases its slot from inside it; forming the next batch there
// would recurse once per queued request, so such a thread hands the next
// batch to the scheduler thread instead.
thread_local bool t_in_execute = false;

class InExecute {
 public:
  InExecute() : outer_(!t_in_execute) { t_in_execute = true; }
  ~InExecute() {
    if (outer_) t_in_execute = false;
  }

 private:
  const bool outer_;
};

size_t InputBytes(const RequestQueue::Ref& ref) {
  size_t bytes = 0;
  for (const RequestInput& input : ref.it->request->inputs) {
    bytes += input.byte_size();
  }
  return bytes;
}

}  // namespace

struct DynamicBatcher::Batch {
  std::vector<QueuedRequest> requests;  // Batch order = row order.
  int64_t batch_size = 0;
  SlotRef slot{};
  uint64_t ticket = 0;  // Its slot's instance timeline's.
  Clock::TimePoint formed_at;
  bool ok = false;                         // answered successfully
  std::vector<Clock::Duration> latencies;  // of the answered requests
  Clock::Duration gather{0};
  TimeInterval gather_span, scatter_span;
};

namespace {

// The steps of a batch completed at `done`: the slot reports how long each
// device step took, and they run back to back, the last ending at `done`.
BatchIntervals StepIntervals(const TimeInterval& gather,
                             const TimeInterval& scatter,
                             const StepTimings& timings,
                             Clock::TimePoint done) {
  BatchIntervals steps;
  steps.gather = gather;
  steps.scatter = scatter;
  steps.copy_out = {done - timings.copy_out, done};
  steps.run = {steps.copy_out.begin - timings.run, steps.copy_out.begin};
  steps.copy_in = {steps.run.begin - timings.copy_in, steps.run.begin};
  return steps;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DynamicBatcher>> DynamicBatcher::Create(
    const SchedulerOptions& options,
    std::vector<std::unique_ptr<ExecutorInstance>> instances) {
  if (absl::Status s = ValidateSchedulerOptions(options); !s.ok()) return s;
  if (instances.empty()) {
    return absl::InvalidArgumentError("no executor instances");
  }
  for (const auto& instance : instances) {
    if (instance == nullptr || instance->num_slots() < 1) {
      return absl::InvalidArgumentError(
          "every executor instance must exist and have a slot");
    }
  }
  auto batcher =
      absl::WrapUnique(new DynamicBatcher(options, std::move(instances)));
  batcher->scheduler_ =
      std::thread([b = batcher.get()] { b->SchedulerLoop(); });
  return batcher;
}

DynamicBatcher::DynamicBatcher(
    const SchedulerOptions& options,
    std::vector<std::unique_ptr<ExecutorInstance>> instances)
    : options_(options),
      clock_(options.clock),
      validator_(options.max_batch_size, options.inputs, options.outputs),
      assembler_(options.max_batch_size > 0, options.outputs),
      policy_(BatchingPolicy::FromOptions(options)),
      queue_(options),
      instances_(std::move(instances)) {
  // Slot k of every instance before slot k+1 of any: batches spread over
  // instances before they double-buffer on one.
  int max_slots = 0;
  for (const auto& instance : instances_) {
    max_slots = std::max(max_slots, instance->num_slots());
  }
  absl::MutexLock lock(&mu_);
  for (int k = 0; k < max_slots; ++k) {
    for (size_t i = 0; i < instances_.size(); ++i) {
      ExecutorInstance* instance = instances_[i].get();
      if (k < instance->num_slots()) {
        free_slots_.push_back(
            SlotRef{instance, instance->slot(k), static_cast<int>(i)});
      }
    }
  }
  timelines_.assign(instances_.size(), InstanceTimeline(clock_->Now()));
  if (options.latency_target > Clock::Duration::zero()) {
    target_.emplace(options.latency_target, options.max_batch_size,
                    static_cast<int>(instances_.size()));
    adaptive_ = policy_;
    adaptive_.preferred_batch_sizes.clear();
  }
  health_.assign(instances_.size(), absl::OkStatus());
  healthy_ = static_cast<int>(instances_.size());
}

DynamicBatcher::~DynamicBatcher() { Shutdown(); }

absl::Status DynamicBatcher::Enqueue(
    std::unique_ptr<InferenceRequest>* request) {
  if (request == nullptr || *request == nullptr ||
      (*request)->sink == nullptr) {
    return absl::InvalidArgumentError("a request needs a response sink");
  }
  absl::StatusOr<RequestLayout> layout = validator_.Validate(**request);
  std::shared_ptr<Batch> batch;
  bool wake_scheduler = true;
  absl::Status status =
      layout.ok() ? Admit(request, *std::move(layout), &batch, &wake_scheduler)
                  : layout.status();
  if (!status.ok()) {
    stats_.RecordFailure(Clock::Duration::zero(), ReasonOf(status));
    return status;
  }
  if (wake_scheduler) cv_.Signal();
  if (batch != nullptr) Execute(std::move(batch));
  return absl::OkStatus();
}

absl::Status DynamicBatcher::Admit(std::unique_ptr<InferenceRequest>* request,
                                   RequestLayout layout,
                                   std::shared_ptr<Batch>* batch,
                                   bool* wake_scheduler) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) {
    return absl::UnavailableError(
        absl::StrCat("model '", options_.model_name, "' is shutting down"));
  }
  if (healthy_ == 0) return HealthLocked();
  if (absl::Status s = queue_.CheckRoom((*request)->priority); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("model '", options_.model_name, "': ", s.message()));
  }
  QueuedRequest queued;
  queued.request = std::move(*request);
  queued.layout = std::move(layout);
  queued.enqueue_time = clock_->Now();
  const Clock::TimePoint now = queued.enqueue_time;
  if (target_) target_->RecordArrival(now, queued.layout.batch_size);
  queue_.Push(std::move(queued));
  NoteQueue(now);
  *batch = TakeInlineBatch(now);
  *wake_scheduler = SchedulerHasWork();
  return absl::OkStatus();
}

bool DynamicBatcher::SchedulerHasWork() const {
  return shutting_down_ || cancel_scan_pending_ ||
         (!queue_.empty() && !free_slots_.empty()) ||
         queue_.NextExpiry() < scheduler_wakes_at_;
}

std::shared_ptr<DynamicBatcher::Batch> DynamicBatcher::TakeInlineBatch(
    Clock::TimePoint now) {
  if (t_in_execute || shutting_down_ || cancel_scan_pending_ ||
      queue_.empty() || free_slots_.empty() || queue_.NextExpiry() <= now) {
    return nullptr;  // the scheduler thread's work
  }
  const BatchPlan plan = PlanBatch(queue_, PolicyNow(now), now, false);
  if (!plan.ready || !plan.cancelled.empty()) return nullptr;
  if (target_) {
    for (const RequestQueue::Ref& ref : plan.members) {
      if (target_->ShouldShed(ref.it->enqueue_time, ref.it->request->deadline,
                              now, ref.it->layout.batch_size)) {
        return nullptr;  // the scheduler thread sheds it
      }
    }
  }
  size_t bytes = 0;
  for (const RequestQueue::Ref& ref : plan.members) bytes += InputBytes(ref);
  if (bytes > kInlineBatchBytes) return nullptr;
  return TakeBatch(plan, now);
}

void DynamicBatcher::NotifyCancelled() {
  {
    absl::MutexLock lock(&mu_);
    cancel_scan_pending_ = true;
  }
  cv_.Signal();
}

void DynamicBatcher::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      absl::MutexLock lock(&mu_);
      shutting_down_ = true;
    }
    cv_.Signal();
    scheduler_.join();
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ == 0;
    };
    mu_.Await(absl::Condition(&drained));
  });
}

ModelStatsSnapshot DynamicBatcher::Stats() const { return stats_.Snapshot(); }

int64_t DynamicBatcher::QueuedRequests() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

int DynamicBatcher::InFlightBatches() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

std::vector<size_t> DynamicBatcher::QueuedRequestsByLevel() const {
  absl::MutexLock lock(&mu_);
  return queue_.LevelSizes();
}

std::vector<absl::Status> DynamicBatcher::InstanceHealth() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

absl::Status DynamicBatcher::Health() const {
  absl::MutexLock lock(&mu_);
  return HealthLocked();
}

absl::Status DynamicBatcher::HealthLocked() const {
  if (healthy_ > 0) return absl::OkStatus();
  std::string faults;
  for (size_t i = 0; i < health_.size(); ++i) {
    absl::StrAppend(&faults, i == 0 ? "" : "; ", "instance ", i, ": ",
                    health_[i].message());
  }
  return absl::UnavailableError(absl::StrCat(
      "model '", options_.model_name, "' has no healthy instance: ", faults));
}

std::vector<RequestQueue::Rejection> DynamicBatcher::RetireInstance(
    int i, absl::Status fault, Clock::TimePoint now) {
  std::vector<RequestQueue::Rejection> failed;
  if (!health_[i].ok()) return failed;
  health_[i] = std::move(fault);
  --healthy_;
  if (target_) target_->RetireInstance(i);
  std::erase_if(free_slots_,
                [i](const SlotRef& s) { return s.instance_index == i; });
  if (healthy_ > 0) return failed;
  const absl::Status unavailable = HealthLocked();
  std::vector<RequestQueue::Ref> queued;
  queue_.ForEachInServiceOrder([&queued](const RequestQueue::Ref& ref) {
    queued.push_back(ref);
    return true;
  });
  for (const RequestQueue::Ref& ref : queued)
    failed.push_back({queue_.Take(ref), unavailable});
  NoteQueue(now);
  return failed;
}

std::vector<InstanceStateTotals> DynamicBatcher::InstanceStates() const {
  absl::MutexLock lock(&mu_);
  const Clock::TimePoint now = clock_->Now();
  std::vector<InstanceStateTotals> states;
  for (const InstanceTimeline& timeline : timelines_) {
    states.push_back(timeline.Totals(now));
  }
  return states;
}

void DynamicBatcher::NoteQueue(Clock::TimePoint now) {
  for (InstanceTimeline& timeline : timelines_) {
    timeline.QueueChanged(now, queue_.empty());
  }
}

void DynamicBatcher::SchedulerLoop() {
  while (true) {
    Work work = AwaitWork();
    for (RequestQueue::Rejection& r : work.rejected) {
      FailRequest(r.request, r.status, ReasonOf(r.status));
    }
    if (work.batch != nullptr) Execute(std::move(work.batch));
    if (work.exit) return;
  }
}

DynamicBatcher::Work DynamicBatcher::AwaitWork() {
  absl::MutexLock lock(&mu_);
  while (true) {
    const Clock::TimePoint now = clock_->Now();
    Work work;
    work.rejected = TakeRejections(now);
    if (!work.rejected.empty()) return work;
    if (queue_.empty() && shutting_down_) {
      work.exit = true;
      return work;
    }
    Clock::TimePoint wake = queue_.NextExpiry();
    if (!queue_.empty() && !free_slots_.empty()) {
      const BatchPlan plan =
          PlanBatch(queue_, PolicyNow(now), now, shutting_down_);
      for (const RequestQueue::Ref& ref : plan.cancelled) {
        work.rejected.push_back(
            RequestQueue::Rejection{queue_.Take(ref), CancelledWhileQueued()});
      }
      if (work.rejected.empty() && plan.ready)
        work.rejected = TakeLate(plan, now);
      if (!work.rejected.empty()) {
        NoteQueue(now);
        return work;  // The plan is stale now.
      }
      if (plan.ready) {
        work.batch = TakeBatch(plan, now);
        return work;
      }
      wake = std::min(wake, plan.ready_at);
    }
    scheduler_wakes_at_ = wake;
    clock_->WaitUntil(&mu_, &cv_, wake);
    scheduler_wakes_at_ = Clock::TimePoint::max();
  }
}

std::vector<RequestQueue::Rejection> DynamicBatcher::TakeRejections(
    Clock::TimePoint now) {
  std::vector<RequestQueue::Rejection> rejected = queue_.TakeExpired(now);
  if (cancel_scan_pending_) {
    cancel_scan_pending_ = false;
    for (RequestQueue::Rejection& r : queue_.TakeCancelled()) {
      rejected.push_back(std::move(r));
    }
  }
  if (!rejected.empty()) NoteQueue(now);
  return rejected;
}

const BatchingPolicy& DynamicBatcher::PolicyNow(Clock::TimePoint now) {
  if (!target_) return policy_;
  const LatencyDecision& decision = target_->Decide(now);
  adaptive_.ready_batch_size = decision.batch_size;
  adaptive_.max_queue_delay = decision.wait;
  return adaptive_;
}

std::vector<RequestQueue::Rejection> DynamicBatcher::TakeLate(
    const BatchPlan& plan, Clock::TimePoint now) {
  std::vector<RequestQueue::Rejection> late;
  if (!target_) return late;
  for (const RequestQueue::Ref& ref : plan.members) {
    const QueuedRequest& q = *ref.it;
    if (!target_->ShouldShed(q.enqueue_time, q.request->deadline, now,
                             q.layout.batch_size)) {
      continue;
    }
    const Clock::Duration service = target_->PredictService(q.layout.batch_size)
                                        .value_or(Clock::Duration(0));
    const bool deadline = now + service > q.request->deadline;
    auto ms = [](Clock::Duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    absl::Status status = absl::DeadlineExceededError(absl::StrFormat(
        "model '%s': the request would miss its %s (queued %.3g ms; its %d "
        "rows alone are predicted to take %.3g ms; latency_target_p99_ms "
        "%.3g): answered at once instead of run late",
        options_.model_name, deadline ? "deadline" : "latency target",
        ms(now - q.enqueue_time), q.layout.batch_size, ms(service),
        ms(target_->target())));
    late.push_back({queue_.Take(ref), std::move(status)});
  }
  if (!late.empty()) {
    target_->CountShed(late.size());
    NoteQueue(now);
  }
  return late;
}

std::optional<LatencyTargetSnapshot> DynamicBatcher::LatencyTarget() const {
  absl::MutexLock lock(&mu_);
  if (!target_) return std::nullopt;
  return target_->Snapshot(clock_->Now());
}

void DynamicBatcher::LearnFrom(const Batch& batch, Clock::TimePoint done) {
  if (!target_ || !batch.ok) return;
  target_->RecordBatch(batch.slot.instance_index, batch.batch_size,
                       done - batch.formed_at);
  for (Clock::Duration latency : batch.latencies)
    target_->RecordAnswer(latency);
}

std::shared_ptr<DynamicBatcher::Batch> DynamicBatcher::TakeBatch(
    const BatchPlan& plan, Clock::TimePoint now) {
  auto batch = std::make_shared<Batch>();
  for (const RequestQueue::Ref& ref : plan.members) {
    batch->requests.push_back(queue_.Take(ref));
  }
  batch->batch_size = plan.batch_size;
  batch->formed_at = now;
  if (target_) {
    // Requests left queued stand for at least a row each.
    target_->RecordFormed(plan.batch_size, static_cast<int64_t>(queue_.size()),
                          plan.waited_out);
  }
  batch->slot = free_slots_.front();
  free_slots_.pop_front();
  ++in_flight_;
  batch->ticket = timelines_[batch->slot.instance_index].BatchTaken(now);
  NoteQueue(now);
  return batch;
}

void DynamicBatcher::Execute(std::shared_ptr<Batch> batch) {
  const InExecute in_execute;
  std::vector<Shape> shapes = assembler_.InputShapes(batch->requests);
  if (batch->slot.slot->ReadyFor(shapes)) {
    GatherAndSubmit(batch, shapes);
    return;
  }
  SetupThread(batch->slot.instance_index)
      .Enqueue([this, batch = std::move(batch), shapes = std::move(shapes)] {
        const InExecute in_execute;
        GatherAndSubmit(batch, shapes);
      });
}

CpuStream& DynamicBatcher::SetupThread(int i) {
  absl::MutexLock lock(&setup_mu_);
  if (setup_threads_.empty()) {
    setup_threads_.resize(instances_.size());
    setup_batches_.assign(instances_.size(), 0);
  }
  if (setup_threads_[i] == nullptr) {
    setup_threads_[i] = std::make_unique<CpuStream>(nullptr);
  }
  ++setup_batches_[i];
  return *setup_threads_[i];
}

std::vector<int64_t> DynamicBatcher::SetupBatches() const {
  absl::MutexLock lock(&setup_mu_);
  if (setup_batches_.empty()) return std::vector<int64_t>(instances_.size());
  return setup_batches_;
}

void DynamicBatcher::GatherAndSubmit(const std::shared_ptr<Batch>& batch,
                                     const std::vector<Shape>& shapes) {
  const Clock::TimePoint start = clock_->Now();
  BatchSlot* slot = batch->slot.slot;
  absl::Status status = assembler_.SizeInputs(batch->requests, shapes, slot);
  if (status.ok()) status = assembler_.Gather(&batch->requests, slot);
  const Clock::TimePoint gathered = clock_->Now();
  batch->gather = gathered - start;
  batch->gather_span = {start, gathered};
  if (!status.ok()) {
    CompleteBatch(*batch, status);
    return;
  }
  // A failed step fails the later ones on the slot, so the event Submit
  // returns (CopyOut's) carries the batch's status.
  batch->slot.instance->Submit(slot)->OnComplete(
      [this, batch](const absl::Status& s) { CompleteBatch(*batch, s); });
}

void DynamicBatcher::CompleteBatch(Batch& batch, absl::Status status) {
  const Clock::TimePoint done = clock_->Now();
  if (status.ok()) {
    status = assembler_.CheckOutputs(*batch.slot.slot, batch.batch_size);
  }
  // A failed batch may be a sticky fault's: the instance is retired before
  // anyone hears of the failure, so a client that then asks ModelReady or
  // sends again sees it.
  std::vector<RequestQueue::Rejection> retired;
  if (!status.ok()) {
    if (absl::Status health = batch.slot.instance->health(); !health.ok()) {
      absl::MutexLock lock(&mu_);
      retired = RetireInstance(batch.slot.instance_index, std::move(health),
                               clock_->Now());
    }
  }
  if (status.ok()) {
    batch.ok = true;
    AnswerBatch(batch);
  } else {
    for (QueuedRequest& q : batch.requests) {
      FailRequest(q, status, FailureReason::kBackend);
    }
  }
  for (RequestQueue::Rejection& r : retired)
    FailRequest(r.request, r.status, ReasonOf(r.status));
  batch.requests.clear();
  const StepTimings timings =
      status.ok() ? batch.slot.slot->timings() : StepTimings{};
  // Last: Shutdown may return once it is done.
  ReleaseSlot(batch, StepIntervals(batch.gather_span, batch.scatter_span,
                                   timings, done));
}

void DynamicBatcher::AnswerBatch(Batch& batch) {
  const BatchSlot& slot = *batch.slot.slot;
  const Clock::TimePoint scatter_start = clock_->Now();
  std::vector<absl::Status> statuses;
  int64_t row = 0;
  for (const QueuedRequest& q : batch.requests) {
    statuses.push_back(assembler_.Scatter(slot, batch.batch_size, row, q));
    row += q.layout.batch_size;
  }
  const Clock::TimePoint end = clock_->Now();
  batch.scatter_span = {scatter_start, end};
  const StepTimings timings = slot.timings();
  BatchDurations durations;
  durations.compute_input = batch.gather + timings.copy_in;
  durations.compute_infer = timings.run;
  durations.compute_output = timings.copy_out + (end - scatter_start);
  stats_.RecordExecution(static_cast<uint64_t>(batch.batch_size), durations);
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    QueuedRequest& q = batch.requests[i];
    if (!statuses[i].ok()) {
      FailRequest(q, statuses[i], FailureReason::kBackend);
      continue;
    }
    stats_.RecordSuccess(batch.formed_at - q.enqueue_time, end - q.enqueue_time,
                         durations);
    if (options_.latency_target > Clock::Duration::zero()) {
      batch.latencies.push_back(end - q.enqueue_time);  // for the policy
    }
    q.request->sink->Finish(absl::OkStatus());
  }
}

void DynamicBatcher::FailRequest(QueuedRequest& request,
                                 const absl::Status& status,
                                 FailureReason reason) {
  stats_.RecordFailure(clock_->Now() - request.enqueue_time, reason);
  request.request->sink->Finish(status);
}

void DynamicBatcher::ReleaseSlot(const Batch& batch,
                                 const BatchIntervals& steps) {
  std::shared_ptr<Batch> next;
  {
    absl::MutexLock lock(&mu_);
    const Clock::TimePoint now = clock_->Now();
    const int index = batch.slot.instance_index;
    timelines_[index].BatchReleased(batch.ticket, now, steps);
    LearnFrom(batch, steps.copy_out.end);
    // A retired instance's slots stay out (CompleteBatch retires it: a
    // sticky fault fails the batches in flight).
    if (health_[index].ok()) free_slots_.push_back(batch.slot);
    --in_flight_;
    next = TakeInlineBatch(now);
    if (SchedulerHasWork()) {
      // Signalled under the lock: once it is released Shutdown may return
      // and the destructor may run, so `this` must not be touched afterwards
      // (unless `next` holds a slot: then in_flight_ > 0 keeps it alive).
      cv_.Signal();
    }
  }
  if (next != nullptr) Execute(std::move(next));
}

}  // namespace coalesce
