// TokenPackingInputs: the DerivedInputs (derived_inputs.h) of a token-packed
// model (engine/token_packing.h): the pack [T'], unpack and spread [B * S]
// int64 indices of the batch's padding mask (engine/packing_indices.h). A batch
// whose mask is read from shared device memory, and so is not on the
// host, gets the indices of a batch without padding (every row real):
// right, only not faster.
#ifndef COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_
#define COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_

#include <vector>

#include "engine/data_type.h"
#include "engine/device/derived_inputs.h"

namespace coalesce {

class TokenPackingInputs : public DerivedInputs {
 public:
  // `mask_input`: the padding mask's index among the batch's inputs, of
  // `mask_dtype`.
  TokenPackingInputs(int mask_input, DataType mask_dtype)
      : mask_input_(mask_input), mask_dtype_(mask_dtype) {}

  int count() const override { return 3; }
  // {[T'], [B * S], [B * S]} for every token bucket T' (packing_indices.h),
  // the largest (B * S) first; {[1], [0], [0]} when the mask is not [B, S]
  // or empty
  // (Compute then fails or has nothing to pack).
  std::vector<std::vector<Shape>> PossibleShapes(
      const std::vector<Shape>& shapes) const override;
  // InvalidArgument when the mask is not [batch, seq].
  absl::StatusOr<std::vector<Shape>> Compute(
      const std::vector<Shape>& shapes, const std::vector<const void*>& inputs,
      const std::vector<void*>& out) const override;

 private:
  const int mask_input_;
  const DataType mask_dtype_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_
