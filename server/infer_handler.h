// InferHandler: the request path shared by ModelInfer and ModelStreamInfer.
// Finds the served model, decodes the message into an InferenceRequest whose
// outputs go straight into the response, and hands it to the model's batcher.
// Thread-safe; holds no state of its own besides its collaborators.
#ifndef COALESCE_SERVER_INFER_HANDLER_H_
#define COALESCE_SERVER_INFER_HANDLER_H_

#include <chrono>
#include <memory>

#include "batching/clock.h"
#include "proto/grpc_service.pb.h"
#include "server/inflight_budget.h"
#include "server/model_manager.h"
#include "server/response_sinks.h"
#include "server/shared_memory.h"

namespace coalesce {

class InferHandler {
 public:
  // REQUIRES: manager, clock, shared_memory (may be null: no shared memory)
  // and budget (may be null: no limit) outlive the handler.
  InferHandler(ModelManager* manager, Clock* clock,
               const SharedMemoryManager* shared_memory = nullptr,
               InflightBudget* budget = nullptr)
      : manager_(manager),
        clock_(clock),
        shared_memory_(shared_memory),
        budget_(budget) {}

  // Submits `proto` for execution. The sink is always finished exactly once:
  // by the batcher when the request runs (or times out, is cancelled...), or
  // right here with the error when the model is unknown (NotFound), the
  // request is malformed (InvalidArgument), the queue is full or the
  // server holds --max-inflight-bytes of requests already (Unavailable).
  // `deadline` is the RPC's (system_clock::time_point::max() for none).
  // Returns the model the request was queued on (null when it was answered
  // here), so that the caller can tell it about a cancellation.
  // REQUIRES: `proto` outlives the sink's Finish.
  std::shared_ptr<ServedModel> Submit(
      const inference::ModelInferRequest& proto,
      std::chrono::system_clock::time_point deadline,
      std::unique_ptr<ProtoResponseSink> sink);

 private:
  // Enqueues on `served`; when that version was unloaded or replaced in the
  // meantime, once more on what serves the model now.
  absl::Status Enqueue(const inference::ModelInferRequest& proto,
                       inference::ModelInferResponse* response,
                       std::shared_ptr<ServedModel>* served,
                       std::unique_ptr<InferenceRequest>* request);
  Clock::TimePoint ToClockDeadline(
      std::chrono::system_clock::time_point deadline) const;
  // The requested outputs to be written into shared memory.
  absl::StatusOr<std::map<std::string, SharedMemorySpan>> OutputRegions(
      const inference::ModelInferRequest& proto,
      const std::map<std::string, int64_t>& top_k) const;

  ModelManager* const manager_;
  Clock* const clock_;
  const SharedMemoryManager* const shared_memory_;
  InflightBudget* const budget_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFER_HANDLER_H_
