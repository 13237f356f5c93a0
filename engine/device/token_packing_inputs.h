// TokenPackingInputs: the DerivedInputs (derived_inputs.h) of a token-packed
// model (engine/token_packing.h): the pack [T'], unpack and spread [B * S]
// int64 indices of the batch's padding mask (engine/packing_indices.h). A batch
// whose mask is read from shared device memory, and so is not on the
// host, gets the indices of a batch whose real rows (real_rows, before the
// executor's zero rows) are every position real: right, only not faster.
#ifndef COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_
#define COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_

#include <vector>

#include "engine/data_type.h"
#include "engine/device/derived_inputs.h"
#include "engine/packing_indices.h"

namespace coalesce {

class TokenPackingInputs : public DerivedInputs {
 public:
  // `mask_input`: the padding mask's index among the batch's inputs, of
  // `mask_dtype`. `zero_rows`: whether rows of zeros may pad a batch
  // (TokenPacking::pads_with_zero_rows, engine/token_packing.h).
  TokenPackingInputs(int mask_input, DataType mask_dtype, bool zero_rows)
      : mask_input_(mask_input),
        mask_dtype_(mask_dtype),
        zero_rows_(zero_rows) {}

  int count() const override { return 3; }
  int max_shape_sets() const override {
    return static_cast<int>(kTokenBuckets);
  }
  // When the load-time check allows it: a zero mask row holds no token,
  // so nothing of it is packed.
  bool PadsWithZeroRows() const override { return zero_rows_; }
  // {[T'], [B * S], [B * S]} for every token bucket T' (packing_indices.h)
  // of a [B, S] mask up to that of real_rows * S tokens, the largest
  // first; {[1], [0], [0]} when the mask is not [B, S] or empty (Compute
  // then fails or has nothing to pack).
  std::vector<std::vector<Shape>> PossibleShapes(
      const std::vector<Shape>& shapes, int64_t real_rows) const override;
  // InvalidArgument when the mask is not [batch, seq].
  absl::StatusOr<std::vector<Shape>> Compute(
      const std::vector<Shape>& shapes, int64_t real_rows,
      const std::vector<const void*>& inputs,
      const std::vector<void*>& out) const override;
  // The first min(T', real_rows * S) elements of the mask 1, the rest 0.
  absl::Status WriteInputsFor(const std::vector<Shape>& shapes,
                              int64_t real_rows, int set,
                              const std::vector<void*>& inputs) const override;

 private:
  const int mask_input_;
  const DataType mask_dtype_;
  const bool zero_rows_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_TOKEN_PACKING_INPUTS_H_
