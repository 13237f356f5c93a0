#include "engine/token_packed_plans.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/shape.h"

namespace coalesce {

std::unique_ptr<TokenPackedPlans> TokenPackedPlans::For(
    const std::shared_ptr<const Model>& model, const PlanOptions& options) {
  if (model == nullptr || model->packed() == nullptr) return nullptr;
  const ModelSignature& sig = model->signature();
  for (const std::vector<TensorSpec>* specs : {&sig.inputs, &sig.outputs}) {
    for (const TensorSpec& spec : *specs) {
      if (spec.dtype == DataType::kBytes) return nullptr;
    }
  }
  const int mask = model->packing().mask_input;
  return std::unique_ptr<TokenPackedPlans>(new TokenPackedPlans(
      model->packed(), mask, sig.inputs[mask].dtype, options));
}

absl::StatusOr<std::shared_ptr<const ExecutionPlan>> TokenPackedPlans::PlanFor(
    const std::vector<Shape>& shapes, const void* mask,
    const ExecutionPlan& padded, PackingIndices* indices) {
  const Shape& mask_shape = shapes[mask_input_];
  if (mask_shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the padding mask has shape ", ShapeToString(mask_shape),
                     ", not [batch, sequence]"));
  }
  const int64_t batch = mask_shape[0], seq = mask_shape[1];
  if (batch * seq == 0) return nullptr;
  absl::Status s = ComputePackingIndices(mask, mask_dtype_, batch, seq, indices,
                                         CpuTokenBuckets(batch, seq));
  if (!s.ok()) return s;
  if (indices->tokens == batch * seq) return nullptr;
  packed_shapes_ = shapes;
  packed_shapes_.push_back({static_cast<int64_t>(indices->pack.size())});
  packed_shapes_.push_back({batch * seq});
  packed_shapes_.push_back({batch * seq});
  auto plan = plans_.Get(packed_shapes_);
  if (!plan.ok()) return plan.status();
  for (int i = 0; i < padded.num_outputs(); ++i) {
    if ((*plan)->output_byte_size(i) != padded.output_byte_size(i)) {
      return absl::InternalError(absl::StrCat(
          "token packing: output '", padded.output_name(i), "' has ",
          (*plan)->output_byte_size(i), " bytes packed, ",
          padded.output_byte_size(i), " padded"));
    }
  }
  return plan;
}

}  // namespace coalesce
