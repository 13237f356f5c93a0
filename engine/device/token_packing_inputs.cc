#include "engine/device/token_packing_inputs.h"

#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "engine/packing_indices.h"

namespace coalesce {
namespace {

// The mask's [batch, seq], or false when it is not 2-D.
bool MaskDims(const std::vector<Shape>& shapes, int mask, int64_t* batch,
              int64_t* seq) {
  if (mask >= static_cast<int>(shapes.size()) || shapes[mask].size() != 2) {
    return false;
  }
  *batch = shapes[mask][0];
  *seq = shapes[mask][1];
  return true;
}

}  // namespace

std::vector<std::vector<Shape>> TokenPackingInputs::PossibleShapes(
    const std::vector<Shape>& shapes) const {
  int64_t batch = 0, seq = 0;
  if (!MaskDims(shapes, mask_input_, &batch, &seq) || batch * seq == 0) {
    return {{{1}, {0}, {0}}};
  }
  // TokenBucket's values: rows, then the multiples of its step below.
  const int64_t rows = batch * seq;
  const int64_t step = TokenBucket(1, batch, seq);
  std::vector<std::vector<Shape>> possible = {{{rows}, {rows}, {rows}}};
  for (int64_t bucket = (rows - 1) / step * step; bucket >= step;
       bucket -= step) {
    possible.push_back({{bucket}, {rows}, {rows}});
  }
  return possible;
}

absl::StatusOr<std::vector<Shape>> TokenPackingInputs::Compute(
    const std::vector<Shape>& shapes, const std::vector<const void*>& inputs,
    const std::vector<void*>& out) const {
  int64_t batch = 0, seq = 0;
  if (!MaskDims(shapes, mask_input_, &batch, &seq)) {
    return absl::InvalidArgumentError(
        "token packing: the padding mask is not [batch, sequence]");
  }
  const int64_t rows = batch * seq;
  auto* pack = static_cast<int64_t*>(out[0]);
  auto* unpack = static_cast<int64_t*>(out[1]);
  auto* spread = static_cast<int64_t*>(out[2]);
  if (rows == 0) {  // nothing to pack; one filler row, as PossibleShapes says
    pack[0] = 0;
    return std::vector<Shape>{{1}, {0}, {0}};
  }
  if (inputs[mask_input_] == nullptr) {  // on the device: every row real
    for (int64_t* index : {pack, unpack, spread})
      std::iota(index, index + rows, int64_t{0});
    return std::vector<Shape>{{rows}, {rows}, {rows}};
  }
  PackingIndices indices;
  absl::Status s = ComputePackingIndices(inputs[mask_input_], mask_dtype_,
                                         batch, seq, &indices);
  if (!s.ok()) return s;
  std::memcpy(pack, indices.pack.data(), indices.pack.size() * sizeof(int64_t));
  std::memcpy(unpack, indices.unpack.data(),
              indices.unpack.size() * sizeof(int64_t));
  std::memcpy(spread, indices.spread.data(),
              indices.spread.size() * sizeof(int64_t));
  return std::vector<Shape>{
      {static_cast<int64_t>(indices.pack.size())}, {rows}, {rows}};
}

}  // namespace coalesce
