// TokenPackedPlans: how an executor runs a model with a packed form
// (Model::packed(), engine/token_packing.h): per batch, the padding mask
// gives the pack, unpack and spread indices (engine/packing_indices.h), and the
// batch runs the packed model's plan for its shapes and token bucket (of
// kCpuTokenRows rows: CpuTokenBuckets); a batch without padding runs the
// padded plan as before (the packed one would only add its copies). The
// packed plans are built on first use (about 0.3 ms for bert-base) and the
// first kMaxPackedPlans are kept (about 320 KB each for bert-base); later
// ones are built for their batch and dropped.
//
// Thread-compatible: one per executor instance, used from its worker.
#ifndef COALESCE_ENGINE_TOKEN_PACKED_PLANS_H_
#define COALESCE_ENGINE_TOKEN_PACKED_PLANS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/packing_indices.h"
#include "engine/plan_cache.h"
#include "engine/shape.h"

namespace coalesce {

class TokenPackedPlans {
 public:
  static constexpr size_t kMaxPackedPlans = 512;

  // Null when `model` has no packed form, or when a BYTES input or output
  // makes its plans' string blocks differ from the padded plan's.
  static std::unique_ptr<TokenPackedPlans> For(
      const std::shared_ptr<const Model>& model,
      const PlanOptions& options = {});

  // The packed plan for a batch of the model's `shapes` whose padding mask
  // (input packing().mask_input) holds `mask`, with the indices it reads
  // in `*indices` (its pack, unpack and spread indices are inputs
  // num_inputs() to num_inputs() + 2 of the plan);
  // null when every position of the batch is real. InvalidArgument when
  // the mask is not [batch, seq] or the shapes do not fit the packed model;
  // Internal when its outputs would not fill the padded plan's buffers
  // (`padded`, the batch's padded plan).
  absl::StatusOr<std::shared_ptr<const ExecutionPlan>> PlanFor(
      const std::vector<Shape>& shapes, const void* mask,
      const ExecutionPlan& padded, PackingIndices* indices);

  int mask_input() const { return mask_input_; }

 private:
  TokenPackedPlans(std::shared_ptr<const Model> packed, int mask_input,
                   DataType mask_dtype, const PlanOptions& options)
      : plans_(std::move(packed), kMaxPackedPlans, options),
        mask_input_(mask_input),
        mask_dtype_(mask_dtype) {}

  PlanCache plans_;
  const int mask_input_;
  const DataType mask_dtype_;
  std::vector<Shape> packed_shapes_;  // PlanFor's, reused
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_TOKEN_PACKED_PLANS_H_
