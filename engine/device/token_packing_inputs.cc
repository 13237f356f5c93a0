#include "engine/device/token_packing_inputs.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"

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

// real_rows within [0, batch].
int64_t ClampRows(int64_t real_rows, int64_t batch) {
  return std::clamp<int64_t>(real_rows, 0, batch);
}

void CopyIndices(const PackingIndices& indices, const std::vector<void*>& out) {
  const std::vector<int64_t>* from[] = {&indices.pack, &indices.unpack,
                                        &indices.spread};
  for (int i = 0; i < 3; ++i) {
    std::memcpy(out[i], from[i]->data(), from[i]->size() * sizeof(int64_t));
  }
}

}  // namespace

std::vector<std::vector<Shape>> TokenPackingInputs::PossibleShapes(
    const std::vector<Shape>& shapes, int64_t real_rows) const {
  int64_t batch = 0, seq = 0;
  if (!MaskDims(shapes, mask_input_, &batch, &seq) || batch * seq == 0) {
    return {{{1}, {0}, {0}}};
  }
  // TokenBucket's values: multiples of its step, the largest that of
  // every real row's position real.
  const int64_t rows = batch * seq;
  const int64_t step = TokenBucket(1, batch, seq);
  const int64_t largest =
      TokenBucket(ClampRows(real_rows, batch) * seq, batch, seq);
  std::vector<std::vector<Shape>> possible = {{{largest}, {rows}, {rows}}};
  for (int64_t bucket = (largest - 1) / step * step; bucket >= step;
       bucket -= step) {
    possible.push_back({{bucket}, {rows}, {rows}});
  }
  return possible;
}

absl::StatusOr<std::vector<Shape>> TokenPackingInputs::Compute(
    const std::vector<Shape>& shapes, int64_t real_rows,
    const std::vector<const void*>& inputs,
    const std::vector<void*>& out) const {
  int64_t batch = 0, seq = 0;
  if (!MaskDims(shapes, mask_input_, &batch, &seq)) {
    return absl::InvalidArgumentError(
        "token packing: the padding mask is not [batch, sequence]");
  }
  const int64_t rows = batch * seq;
  if (rows == 0) {  // nothing to pack; one filler row, as PossibleShapes says
    static_cast<int64_t*>(out[0])[0] = 0;
    return std::vector<Shape>{{1}, {0}, {0}};
  }
  const void* mask = inputs[mask_input_];
  DataType dtype = mask_dtype_;
  std::vector<uint8_t> real;
  if (mask == nullptr) {  // on the device: the real rows' positions real
    real.assign(static_cast<size_t>(rows), 0);
    std::fill_n(real.begin(), ClampRows(real_rows, batch) * seq, 1);
    mask = real.data();
    dtype = DataType::kBool;
  }
  PackingIndices indices;
  absl::Status s = ComputePackingIndices(mask, dtype, batch, seq, &indices);
  if (!s.ok()) return s;
  CopyIndices(indices, out);
  return std::vector<Shape>{
      {static_cast<int64_t>(indices.pack.size())}, {rows}, {rows}};
}

absl::Status TokenPackingInputs::WriteInputsFor(
    const std::vector<Shape>& shapes, int64_t real_rows, int set,
    const std::vector<void*>& inputs) const {
  int64_t batch = 0, seq = 0;
  if (!MaskDims(shapes, mask_input_, &batch, &seq)) {
    return absl::InvalidArgumentError(
        "token packing: the padding mask is not [batch, sequence]");
  }
  const std::vector<std::vector<Shape>> possible =
      PossibleShapes(shapes, real_rows);
  if (set < 0 || set >= static_cast<int>(possible.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token packing: no token bucket ", set, " of ", possible.size()));
  }
  // A bucket past the real rows' positions is theirs rounded up (the
  // largest): every position real gives it.
  const int64_t elements = ClampRows(real_rows, batch) * seq;
  const int64_t tokens = std::min(possible[set][0][0], elements);
  return WriteMaskWithTokens(inputs[mask_input_], mask_dtype_, elements,
                             tokens);
}

}  // namespace coalesce
