// BatchAssembler: moves bytes between requests and a BatchSlot.
//
// Gather writes each request's input bytes once, straight into the slot's
// input buffers at the request's row offset (requests in batch order).
// Scatter hands each request its rows of every output it asked for through
// ResponseSink::AddOutput, with the batch dim replaced by the request's own
// (for a BYTES output, the serialized elements of those rows).
// When the model does not batch (max_batch_size 0) a batch is one request and
// shapes are passed through unchanged.
//
// Immutable after construction; thread-safe. Never owns requests or slots.
#ifndef COALESCE_BATCHING_BATCH_ASSEMBLER_H_
#define COALESCE_BATCHING_BATCH_ASSEMBLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "batching/queued_request.h"
#include "engine/executor.h"
#include "engine/tensor_spec.h"

namespace coalesce {

class BatchAssembler {
 public:
  // `outputs` as in SchedulerOptions (executor output order).
  BatchAssembler(bool batched, std::vector<TensorSpec> outputs);

  // Full input shapes of a batch of `requests`, in model input order.
  // REQUIRES: requests non-empty, with equal item shapes.
  std::vector<Shape> InputShapes(
      const std::vector<QueuedRequest>& requests) const;

  // slot->SetInputShapes(shapes), then for each BYTES input
  // SetInputByteSize with the requests' serialized bytes together. The
  // slot's status when it refuses.
  // REQUIRES: shapes == InputShapes(requests).
  absl::Status SizeInputs(const std::vector<QueuedRequest>& requests,
                          const std::vector<Shape>& shapes,
                          BatchSlot* slot) const;

  // Copies every request's input bytes into slot->input_data(i) (BYTES
  // inputs: the requests' serialized elements one after the other, which is
  // the batch's serialized tensor). Bytes in shared device memory the slot
  // addresses are left to it (SetInputFromDevice), other device bytes are
  // read through the host. Outputs the requests want in device memory the
  // slot addresses are registered with it (SetOutputToDevice) and marked in
  // QueuedRequest::outputs_on_device.
  // REQUIRES: SizeInputs(*requests, ..., slot) returned OK.
  // Internal when the slot's buffer size disagrees with the requests; the
  // read's error naming the input when device memory cannot be read.
  absl::Status Gather(std::vector<QueuedRequest>* requests,
                      BatchSlot* slot) const;

  // Internal when the slot's outputs cannot be split into `batch_size` rows
  // (wrong rank, batch dim or byte size; a BYTES output not holding its
  // shape's serialized elements exactly). Check before any Scatter.
  absl::Status CheckOutputs(const BatchSlot& slot, int64_t batch_size) const;

  // Adds to `request`'s sink its outputs, taken from rows
  // [row_offset, row_offset + request.layout.batch_size) of the slot (with
  // AddDeviceOutput for those the slot wrote into device memory).
  // Internal when the sink returns no buffer. Does not call Finish.
  // REQUIRES: CheckOutputs(slot, batch_size) returned OK.
  absl::Status Scatter(const BatchSlot& slot, int64_t batch_size,
                       int64_t row_offset, const QueuedRequest& request) const;

 private:
  // Input `i` of `requests` into the slot (Gather's work for one input).
  absl::Status GatherInput(const std::vector<QueuedRequest>& requests, size_t i,
                           BatchSlot* slot) const;
  // Registers with the slot the outputs `requests` want in its device's
  // memory, and marks them.
  void RouteDeviceOutputs(std::vector<QueuedRequest>* requests,
                          BatchSlot* slot) const;

  const bool batched_;
  const std::vector<TensorSpec> outputs_;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_BATCH_ASSEMBLER_H_
