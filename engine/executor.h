// ExecutorInstance and BatchSlot: the narrow device interface every executor
// (the CPU executor, the pipelined device executor on CUDA or the simulated
// device) implements, and the only part of the engine that the batching
// layer drives.
//
// An ExecutorInstance is one model instance on one device: it owns a stream of
// work (a worker thread on the CPU, a cudaStream_t on a GPU) and one or more
// BatchSlots. A slot is the staging area of one in-flight batch: host memory
// the batcher gathers request inputs into, and host memory outputs are copied
// back to. An instance with two slots lets batch k+1 be gathered while batch k
// runs (double buffering).
//
// Protocol for one batch on one slot, driven by a single owner at a time:
//   0. optionally ReadyFor(shapes): whether steps 1-3 would set anything up;
//   1. SetInputShapes(...), SetInputByteSize(i, ...) for every BYTES input,
//      then write input_data(i) for every input (host side), except bytes
//      handed over as shared device memory (SetInputFromDevice), and name
//      output rows bound for such memory (SetOutputToDevice);
//   2. CopyIn(slot), Run(slot), CopyOut(slot): enqueued in stream order, each
//      returns an Event completed when that step has finished; a failed step
//      makes the later steps on that slot fail with the same status
//      (Submit(slot) enqueues all three and returns CopyOut's event);
//   3. after CopyOut's event completes OK, read output_shape/output_data and
//      timings(); then the slot may be reused.
// The caller must not touch the slot between CopyIn and the completion of
// CopyOut's event. Different slots may be used from different threads.
//
// BYTES (DataType::kBytes, ONNX STRING) inputs and outputs are in KServe v2's
// serialized form: per element, row-major, a 4-byte little-endian length
// followed by that many bytes (engine/string_io.h). Their byte sizes come
// from the data, not the shape: SetInputByteSize gives an input's, and
// output_byte_size an output's after the batch ran.
#ifndef COALESCE_ENGINE_EXECUTOR_H_
#define COALESCE_ENGINE_EXECUTOR_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/event.h"
#include "engine/shape.h"
#include "engine/shared_device_memory.h"

namespace coalesce {

// Wall time spent in each step of the last batch run on a slot.
struct StepTimings {
  std::chrono::nanoseconds copy_in{0};
  std::chrono::nanoseconds run{0};
  std::chrono::nanoseconds copy_out{0};
};

class BatchSlot {
 public:
  virtual ~BatchSlot() = default;

  // Declares the full shapes (batch dimension included) of this batch's inputs,
  // in the model's input order, and makes input_data() large enough for them.
  // Returns InvalidArgument naming the input when a shape does not fit the
  // model, ResourceExhausted when memory cannot be had.
  virtual absl::Status SetInputShapes(const std::vector<Shape>& shapes) = 0;

  // For a BYTES input: after SetInputShapes, sizes input_data(index) to the
  // batch's serialized byte_size (SetInputShapes gives a BYTES input 0 bytes
  // until then). InvalidArgument for a non-BYTES input or an index out of
  // range, ResourceExhausted when memory cannot be had. Whether the bytes
  // hold exactly the shape's element count is checked when the batch runs
  // (Run fails with InvalidArgument naming the input).
  // REQUIRES: SetInputShapes returned OK.
  virtual absl::Status SetInputByteSize(int index, size_t byte_size) {
    return absl::UnimplementedError(
        "BYTES inputs are not supported by this executor");
  }

  // Host memory to write input `index` into (row-major, input_byte_size bytes;
  // serialized for BYTES).
  // REQUIRES: SetInputShapes (and for BYTES, SetInputByteSize) returned OK.
  virtual char* input_data(int index) = 0;
  virtual size_t input_byte_size(int index) const = 0;

  // Outputs of the last completed batch, in the model's output order; a
  // BYTES output in serialized form, output_byte_size bytes.
  // REQUIRES: the CopyOut event of that batch completed OK.
  virtual const Shape& output_shape(int index) const = 0;
  virtual const char* output_data(int index) const = 0;
  virtual size_t output_byte_size(int index) const = 0;

  virtual StepTimings timings() const = 0;

  // Zero copy for tensors in device memory a client shares
  // (engine/shared_device_memory.h). Whether this slot's device copies to
  // and from `memory` itself; false by default (host executors, whose
  // callers Read and Write such memory through the host instead).
  virtual bool Addresses(const SharedDeviceMemory& memory) const {
    return false;
  }
  // Instead of input_data(index)[offset, offset + ref.size) being written,
  // CopyIn fills those bytes of the batch from `ref`, on the device.
  // Registrations last until the next SetInputShapes. InvalidArgument when
  // the bytes lie outside the input; Unimplemented unless Addresses(ref).
  // REQUIRES: SetInputShapes returned OK.
  virtual absl::Status SetInputFromDevice(int index, size_t offset,
                                          const DeviceMemoryRef& ref) {
    return absl::UnimplementedError("this executor reads host memory only");
  }
  // CopyOut also copies rows [first_row, first_row + rows) of output
  // `index`, of a batch of `batch_rows` rows (each row the same number of
  // bytes), into `ref`, on the device; output_data's copy of those bytes is
  // then unspecified. Lasts until the next SetInputShapes.
  // InvalidArgument when the output's bytes do not split into `batch_rows`
  // rows or the rows do not fit in ref.size (the caller then takes the host
  // path, which reports the error); Unimplemented unless Addresses(ref).
  // REQUIRES: SetInputShapes returned OK.
  virtual absl::Status SetOutputToDevice(int index, int64_t first_row,
                                         int64_t rows, int64_t batch_rows,
                                         const DeviceMemoryRef& ref) {
    return absl::UnimplementedError("this executor writes host memory only");
  }

  // Whether a batch of these full input shapes would take this slot's
  // steady-state path: SetInputShapes, CopyIn, Run and CopyOut would bind
  // no plan, upload nothing, grow no buffer and capture no graph. It is how
  // an executor declares inline batch formation: the batcher gathers and
  // submits a batch on an enqueuing or completing thread only when it
  // holds, and otherwise on the instance's setup thread (dynamic_batcher.h).
  // Never blocks on the device; false when unsure. Called by the slot's
  // owner, before SetInputShapes. Default: true (nothing is ever set up
  // per batch, as on the CPU).
  virtual bool ReadyFor(const std::vector<Shape>& input_shapes) const {
    return true;
  }
};

class ExecutorInstance {
 public:
  virtual ~ExecutorInstance() = default;

  // Number of slots (batches that may be in flight at once on this instance).
  virtual int num_slots() const = 0;
  // REQUIRES: 0 <= index < num_slots(). The instance owns the slot.
  virtual BatchSlot* slot(int index) = 0;

  // Asynchronous steps; see the protocol above. Never block on the device.
  virtual std::shared_ptr<Event> CopyIn(BatchSlot* slot) = 0;
  virtual std::shared_ptr<Event> Run(BatchSlot* slot) = 0;
  virtual std::shared_ptr<Event> CopyOut(BatchSlot* slot) = 0;

  // CopyIn, Run and CopyOut of one batch, enqueued in that order; returns
  // CopyOut's event, which carries the batch's status. What the batcher
  // calls. An executor that can do the three as one unit of work overrides
  // it: the CPU executor runs them as one task on its worker, with one
  // event, instead of three of each.
  virtual std::shared_ptr<Event> Submit(BatchSlot* slot) {
    CopyIn(slot);
    Run(slot);
    return CopyOut(slot);
  }

  // OK, or the sticky fault after which this instance fails every batch
  // (a device's context poisoned by a kernel fault): the batcher then gives
  // it no more batches. Thread-safe.
  virtual absl::Status health() const { return absl::OkStatus(); }

  // The batch sizes (each <= max_batch_size) whose first batches prepare
  // what later batches of that size reuse: a device program binds a plan
  // (uploads, arena) at a size's first batch and captures its graph at the
  // second. The server runs each of them twice at load, before the model
  // is ready (server/model_warmup.h), so that no request pays for it.
  // Empty (the default): nothing worth preparing ahead (the CPU executor's
  // per-shape plans cost far less than a batch).
  virtual std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const {
    return {};
  }

  // How many batches of `shapes` (the model's inputs, one of
  // PreparedBatchSizes' sizes) the warm-up runs to prepare what later
  // batches of that size reuse: a token-packed model binds a plan and
  // captures a graph per token bucket. Default: 1.
  virtual int PreparedVariants(const std::vector<Shape>& shapes) const {
    return 1;
  }

  // Rewrites a batch of zeros of `shapes` (`data`: each input's bytes, in
  // model order) into the one that prepares `variant` (<
  // PreparedVariants(shapes)): a token-packed model's padding mask with
  // that bucket's count of real tokens. Default: nothing to rewrite.
  virtual absl::Status WritePreparedVariant(
      const std::vector<Shape>& shapes, int variant,
      std::vector<std::string>* data) const {
    return absl::OkStatus();
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_EXECUTOR_H_
