// SequenceBatcher: Triton's sequence batcher in front of a DynamicBatcher.
//
// Requests carry a correlation ID and START/END flags (SequenceFlags). The
// batcher keeps each sequence's requests in order, sends at most one request
// of a sequence at a time to the DynamicBatcher (so that a batch holds at most
// one request per sequence, and each request sees the state the previous one
// left), and adds to each request the model's control inputs (START, END,
// READY, CORRID) and implicit state inputs. State outputs are captured into
// the sequence instead of being returned; the next request of the sequence
// gets them as its state inputs (the config's initial state, or zeros, after
// START). Ready requests of different sequences are merged into batches by
// the DynamicBatcher with the strategy's queue delay.
//
// At most max_active_sequences sequences hold a place; a START beyond that
// waits with its requests, in arrival order, until a sequence ends (its END
// request completed) or is released after max_sequence_idle without a
// request. A request for an unknown sequence without START is refused.
//
// Threading: Enqueue, Shutdown and ActiveSequences may be called from any
// thread. A sequence's next request is sent from the thread that completed
// the previous one (an executor thread); idle sequences are released by a
// thread that waits on the Clock. Sinks are called without the lock held.
//
// Ownership: the batcher does not own the DynamicBatcher, which must outlive
// it; it owns each request from a successful Enqueue until the DynamicBatcher
// takes it, and again from its completion until the client's Finish returns.
#ifndef COALESCE_BATCHING_SEQUENCE_BATCHER_H_
#define COALESCE_BATCHING_SEQUENCE_BATCHER_H_

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "batching/dynamic_batcher.h"
#include "batching/inference_request.h"
#include "batching/request_validator.h"
#include "batching/scheduler_options.h"
#include "batching/sequence_options.h"

namespace coalesce {

class SequenceBatcher {
 public:
  // `scheduler` are the options `batcher` was created with (its inputs and
  // outputs include the control and state tensors). InvalidArgument when
  // ValidateSequenceOptions fails. Starts the idle-release thread.
  static absl::StatusOr<std::unique_ptr<SequenceBatcher>> Create(
      const SequenceOptions& sequence, const SchedulerOptions& scheduler,
      DynamicBatcher* batcher);

  SequenceBatcher(const SequenceBatcher&) = delete;
  SequenceBatcher& operator=(const SequenceBatcher&) = delete;
  ~SequenceBatcher();  // Shutdown().

  // Validates `*request` (as the DynamicBatcher would, against the tensors
  // clients send) and queues it behind its sequence's earlier requests. On
  // OK takes *request; its sink's Finish is called exactly once later (with
  // the DynamicBatcher's answer, or InvalidArgument when an earlier END
  // closed the sequence and this request has no START). On error leaves
  // *request untouched:
  //   InvalidArgument: no or zero correlation ID; no START for a sequence
  //     that is not active; a control or state input sent by the client; a
  //     batch size other than 1; a string ID for a numeric CORRID input; or
  //     what RequestValidator says;
  //   Unavailable after Shutdown began.
  absl::Status Enqueue(std::unique_ptr<InferenceRequest>* request);

  // Stops accepting requests, waits until every accepted request has been
  // answered (sequences waiting for a place get one as others end or go
  // idle), then stops the idle-release thread. Does not shut the
  // DynamicBatcher down. Idempotent. REQUIRES: not called from a sink.
  void Shutdown();

  // Sequences holding a place, and sequences waiting for one.
  int ActiveSequences() const;
  int WaitingSequences() const;
  // Blocks until ActiveSequences() == count (for tests: idle release happens
  // on the batcher's own thread).
  void AwaitActiveSequences(int count) const;

 private:
  struct StateValue {
    Shape shape;  // Full request shape (batch dim included when batching).
    std::string bytes;
  };
  struct Sequence;
  class StepSink;
  // A request ready for the DynamicBatcher, or one to fail.
  struct Step {
    std::unique_ptr<InferenceRequest> request;
    absl::Status failure;  // Not OK: answer the request with it instead.
  };

  SequenceBatcher(const SequenceOptions& sequence,
                  const SchedulerOptions& scheduler, DynamicBatcher* batcher);

  absl::Status CheckRequest(const InferenceRequest& request) const;
  // Moves the sequence's next request (if any and the sequence is free) into
  // `steps`, failing requests without START on a closed sequence; erases a
  // finished sequence and gives its place to a waiting one.
  void Advance(Sequence* sequence, std::vector<Step>* steps)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(Sequence* sequence, std::vector<Step>* steps)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Step MakeStep(Sequence* sequence, std::unique_ptr<InferenceRequest> request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<StateValue> InitialState() const;
  // Sends each step to the DynamicBatcher (or fails it); a refused step
  // completes at once and its sequence's next step is sent after it.
  void Submit(std::vector<Step> steps);
  // A step's request completed: keeps its state outputs (`state`; null when
  // it failed), frees the sequence and puts its next step into `next`.
  void StepDone(Sequence* sequence, bool end, std::vector<StateValue>* state,
                std::vector<Step>* next);
  // A client's Finish returned.
  void Answered();
  void IdleLoop();

  const SequenceOptions options_;
  const std::string model_name_;
  const bool batched_;
  Clock* const clock_;
  DynamicBatcher* const batcher_;
  // The tensors a client sends and may ask for (no control or state ones).
  const RequestValidator client_validator_;
  std::vector<std::string> client_outputs_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // Wakes the idle thread and Shutdown.
  absl::flat_hash_map<CorrelationId, std::unique_ptr<Sequence>> sequences_
      ABSL_GUARDED_BY(mu_);
  std::deque<Sequence*> waiting_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  int unanswered_ ABSL_GUARDED_BY(mu_) = 0;  // Accepted, Finish not returned.
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool exit_ ABSL_GUARDED_BY(mu_) = false;
  std::thread idle_thread_;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_SEQUENCE_BATCHER_H_
