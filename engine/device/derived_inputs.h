// DerivedInputs: inputs a device program takes after a batch's own, which
// its executor computes on the host from the batch's inputs while staging
// them (a token-packed model's pack, unpack and spread indices, computed from
// its padding mask: engine/device/token_packing_inputs.h). The pipelined
// executor (pipelined_executor.h) presents the program's inputs without
// them, stages them with the rest and uploads them with the batch.
//
// Implementations are immutable and thread-safe: every slot of every
// instance of a model may share one.
#ifndef COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_
#define COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/shape.h"

namespace coalesce {

class DerivedInputs {
 public:
  virtual ~DerivedInputs() = default;

  // How many inputs follow the batch's own.
  virtual int count() const = 0;

  // Every set of shapes the derived inputs may take for a batch of `shapes`
  // (the batch's own inputs), the largest first: the executor stages
  // buffers for the first, and a batch of `shapes` takes the steady-state
  // path only when the program is ready for each.
  virtual std::vector<std::vector<Shape>> PossibleShapes(
      const std::vector<Shape>& shapes) const = 0;

  // Writes the derived inputs of a batch of `shapes` into `out` (count()
  // host buffers, each sized for the first of PossibleShapes) from the
  // batch's host inputs `inputs` (null where an input's bytes are not on
  // the host: read from shared device memory), and returns their shapes,
  // one of PossibleShapes.
  virtual absl::StatusOr<std::vector<Shape>> Compute(
      const std::vector<Shape>& shapes, const std::vector<const void*>& inputs,
      const std::vector<void*>& out) const = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_
