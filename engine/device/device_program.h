// DeviceProgram: a model's computation bound to one Device implementation,
// as a pipelined executor sees it: what it takes and returns, the output
// shapes for given input shapes, and "enqueue one batch on this stream".
//
// The program owns whatever the computation needs besides its inputs and
// outputs (weights on the device, workspaces, library handles). Enqueue is
// called from one thread at a time per program (the instance's compute
// stream serializes batches), so a program may keep one workspace.
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_PROGRAM_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_PROGRAM_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "engine/shape.h"
#include "engine/tensor_spec.h"

namespace coalesce {

class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;

  // Inputs and outputs in model order; dims may hold -1 (batch, say).
  virtual const ModelSignature& signature() const = 0;

  // Output shapes for these full input shapes (batch dimension included).
  // InvalidArgument naming the input when a shape does not fit.
  virtual absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& input_shapes) const = 0;

  // Enqueues one batch on `stream`. `inputs[i]`/`outputs[i]` are device
  // memory holding/receiving the i-th tensor, row-major, sized for the
  // shapes. A non-OK return fails this batch only; the caller does not use
  // the outputs.
  // REQUIRES: OutputShapes(input_shapes) is OK.
  virtual absl::Status Enqueue(DeviceStream& stream,
                               const std::vector<Shape>& input_shapes,
                               const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs) = 0;

  // Whether OutputShapes and Enqueue of a batch of these shapes, into these
  // device buffers, would set nothing up: no plan to bind, no workspace to
  // grow, nothing to tune or capture (BatchSlot::ReadyFor, for the
  // program). When it is, *output_shapes are OutputShapes'. Never blocks
  // on the device. The caller serializes it with Enqueue. Default: for a
  // program that sets nothing up per shape, whether OutputShapes is OK.
  virtual bool ReadyFor(const std::vector<Shape>& input_shapes,
                        const std::vector<const void*>& inputs,
                        const std::vector<void*>& outputs,
                        std::vector<Shape>* output_shapes) const {
    auto shapes = OutputShapes(input_shapes);
    if (!shapes.ok()) return false;
    *output_shapes = *std::move(shapes);
    return true;
  }

  // Changes whenever a true answer of ReadyFor may have turned false (the
  // program freed what it relied on: a regrown workspace, dropped graphs),
  // so that callers may remember true answers until it does. Thread-safe.
  virtual uint64_t ready_epoch() const { return 0; }

  // The rows a batch of `rows` rows is staged as when its executor pads it
  // with rows of zeros (derived inputs that PadsWithZeroRows,
  // derived_inputs.h), so that the plans and graphs of a few sizes serve
  // every batch. Default: `rows` (nothing gained by padding).
  virtual int64_t StagedRows(int64_t rows) const { return rows; }

  // ExecutorInstance::PreparedBatchSizes's, for this program.
  virtual std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const {
    return {};
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_PROGRAM_H_
