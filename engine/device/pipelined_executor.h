// PipelinedExecutor: the ExecutorInstance (engine/executor.h) for a Device,
// with copies overlapping compute. Device-neutral: the CUDA plugin and the
// simulated device's tests run this same code.
//
// Per instance: three streams (host-to-device copies, compute, device-to-host
// copies) and `num_slots` slots. Each slot owns pinned host staging buffers
// and device buffers for every input and output, and three device events
// (copied in, computed, copied out). For one batch on a slot:
//   CopyIn:  input copies on the copy-in stream, then "copied in";
//   Run:     the compute stream waits for "copied in", the program enqueues
//            the batch, then "computed";
//   CopyOut: the copy-out stream waits for "computed", output copies, then
//            "copied out".
// Nothing orders one slot's work after another slot's except the compute
// stream itself, so with two slots batch k+1 is copied in while batch k
// computes, and batch k is copied out while k+1 computes. A slot's buffers
// are only rewritten after its previous batch's copy-out event completed
// (the ExecutorInstance protocol), so no copy overwrites memory in use.
// Bytes of a batch in shared device memory (SetInputFromDevice,
// SetOutputToDevice) skip the staging buffers: CopyIn copies them device
// to device on the copy-in stream and stages only the rest; CopyOut copies
// those output rows device to device on the copy-out stream and the rest to
// the host.
//
// Host events complete on one waiter thread per stream, which synchronizes
// the device events in stream order; a step completes with the first error of
// its batch. An enqueue error fails only its batch. A sticky device fault
// fails the batches in flight and every later one: health() reports it.
// Staging buffers grow (to the next power of two) and never shrink; running
// out of device or pinned memory fails SetInputShapes with
// ResourceExhausted, naming the tensor. Destruction waits for every
// enqueued step to complete. CopyIn/Run/CopyOut may be called from several
// threads (for different slots); they are serialized.
#ifndef COALESCE_ENGINE_DEVICE_PIPELINED_EXECUTOR_H_
#define COALESCE_ENGINE_DEVICE_PIPELINED_EXECUTOR_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/device/derived_inputs.h"
#include "engine/device/device.h"
#include "engine/device/device_program.h"
#include "engine/executor.h"

namespace coalesce {

struct PipelinedExecutorOptions {
  int num_slots = 2;  // 2: double buffering; 1: each batch waits for the last
  // The device's plugin ordinal: slots copy inputs from and outputs to
  // shared device memory on that ordinal device to device
  // (BatchSlot::Addresses). -1: they address none.
  int device_ordinal = -1;
  // Inputs the program takes after the batch's own, computed on the host
  // from them (derived_inputs.h); null: none. The slots then present the
  // program's inputs without them. Staged in each slot like the others,
  // for the largest of their PossibleShapes, filled at CopyIn (from the
  // staged host inputs; an input read from shared device memory is passed
  // as null) and copied in with the batch; the program runs the shapes
  // Compute gave. A batch is ReadyFor its shapes when the program is for
  // every possible set of derived shapes.
  //
  // When they PadsWithZeroRows, a batch of b rows is staged as the
  // program's StagedRows(b) rows (every own input with the same dim 0 b):
  // the rows after b are zeros, written at CopyIn and copied in with the
  // batch, the derived inputs are computed for the staged rows, and the
  // slot presents b rows of every output (the program's first b rows; the
  // copy-out copies only those; an output whose dim 0 is not the staged
  // rows fails the batch, which rows that are independent rule out). The
  // instance's
  // PreparedVariants of a size are its possible derived shape sets, and
  // WritePreparedVariant writes the inputs that give each
  // (DerivedInputs::WriteInputsFor).
  std::shared_ptr<const DerivedInputs> derived;
};

// health() (ExecutorInstance's) reports a sticky device fault: the
// instance must be rebuilt on a new device context.
class PipelinedExecutor : public ExecutorInstance {};

// InvalidArgument for a null argument or num_slots < 1; the device's error
// when streams or events cannot be created.
absl::StatusOr<std::unique_ptr<PipelinedExecutor>> CreatePipelinedExecutor(
    std::shared_ptr<Device> device, std::unique_ptr<DeviceProgram> program,
    const PipelinedExecutorOptions& options);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_PIPELINED_EXECUTOR_H_
