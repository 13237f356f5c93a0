// DerivedInputs: inputs a device program takes after a batch's own, which
// its executor computes on the host from the batch's inputs while staging
// them (a token-packed model's pack, unpack and spread indices, computed from
// its padding mask: engine/device/token_packing_inputs.h). The pipelined
// executor (pipelined_executor.h) presents the program's inputs without
// them, stages them with the rest and uploads them with the batch.
//
// Padding: when PadsWithZeroRows, the executor may stage a batch of b rows
// as more rows (the program's StagedRows), the extra rows zeros in every own
// input, so that the plans and graphs of a few batch sizes serve every size.
// `real_rows` below is b: rows from it on are such zeros; kEveryRowReal (or
// any value >= the batch's rows) for a batch without them.
//
// Implementations are immutable and thread-safe: every slot of every
// instance of a model may share one.
#ifndef COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_
#define COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/shape.h"

namespace coalesce {

inline constexpr int64_t kEveryRowReal = std::numeric_limits<int64_t>::max();

class DerivedInputs {
 public:
  virtual ~DerivedInputs() = default;

  // How many inputs follow the batch's own.
  virtual int count() const = 0;

  // The most sets of shapes PossibleShapes returns.
  virtual int max_shape_sets() const = 0;

  // Whether rows of zeros in every own input (dim 0 the batch) leave the
  // other rows' outputs as they are and cost (almost) no work: token
  // packing's zero mask row is a sequence without tokens.
  virtual bool PadsWithZeroRows() const = 0;

  // Every set of shapes the derived inputs may take for a batch of `shapes`
  // (the batch's own inputs) whose rows from `real_rows` on are zeros, the
  // largest first: the executor stages buffers for the first, and a batch
  // of `shapes` takes the steady-state path only when the program is ready
  // for each.
  virtual std::vector<std::vector<Shape>> PossibleShapes(
      const std::vector<Shape>& shapes, int64_t real_rows) const = 0;

  // Writes the derived inputs of a batch of `shapes` into `out` (count()
  // host buffers, each sized for the first of PossibleShapes) from the
  // batch's host inputs `inputs` (null where an input's bytes are not on
  // the host: read from shared device memory; its rows from real_rows on
  // are zeros all the same), and returns their shapes, one of
  // PossibleShapes.
  virtual absl::StatusOr<std::vector<Shape>> Compute(
      const std::vector<Shape>& shapes, int64_t real_rows,
      const std::vector<const void*>& inputs,
      const std::vector<void*>& out) const = 0;

  // Writes own inputs for which Compute gives PossibleShapes(shapes,
  // real_rows)[set]: a warm-up batch that prepares that set (token
  // packing: a padding mask with as many real tokens as the set's bucket).
  // `inputs` hold the batch's first real_rows rows of each own input,
  // zeros; only what chooses the set is written.
  virtual absl::Status WriteInputsFor(
      const std::vector<Shape>& shapes, int64_t real_rows, int set,
      const std::vector<void*>& inputs) const = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DERIVED_INPUTS_H_
