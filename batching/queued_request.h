// QueuedRequest: a validated InferenceRequest plus what the batcher derived
// from it (its layout against the model, priority level, queue times).
//
// A plain, move-only value owned by whichever stage holds it: the
// RequestQueue, then a forming Batch, then the completion that answers it.
#ifndef COALESCE_BATCHING_QUEUED_REQUEST_H_
#define COALESCE_BATCHING_QUEUED_REQUEST_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "batching/clock.h"
#include "batching/inference_request.h"
#include "engine/shape.h"

namespace coalesce {

// How a valid request maps onto the model; computed by RequestValidator.
struct RequestLayout {
  // Rows the request contributes to a batch: its batch dim when the model
  // batches, 1 otherwise.
  int64_t batch_size = 1;
  // Model input i is request.inputs[input_order[i]].
  std::vector<int> input_order;
  // Model output indices to return, in response order.
  std::vector<int> output_order;
  // Per model input, the request's shape without the batch dim (the full
  // shape when the model does not batch). Requests merge only when equal.
  std::vector<Shape> item_shapes;
};

struct QueuedRequest {
  std::unique_ptr<InferenceRequest> request;
  RequestLayout layout;
  uint32_t level = 0;  // Index into the queue's levels (0 = highest).
  Clock::TimePoint enqueue_time;
  // When the queue policy's timeout fires; max() = never (or already
  // delayed under kDelay).
  Clock::TimePoint timeout_at = Clock::TimePoint::max();
  // Per layout.output_order entry, set by BatchAssembler::Gather: whether
  // the batch's slot writes that output into the request's device memory.
  std::vector<bool> outputs_on_device;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_QUEUED_REQUEST_H_
