// CheckPackedAgreesWithPadded (token_packing.h): both forms of a model run
// on the CPU on one probe batch, compared at its real positions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/aligned_buffer.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/packing_indices.h"
#include "engine/token_packing.h"
#include "kernels/cpu/threading.h"

namespace coalesce {
namespace {

constexpr int64_t kProbeRows = 2;
constexpr int64_t kDynamicProbeSeq = 8;
constexpr float kTolerance = 1e-4f;

// Element e of a tensor of `dtype` set to `v` (0 or a small positive
// integer); false for a type the probe does not fill.
bool SetElement(DataType dtype, char* data, int64_t e, int64_t v) {
  switch (dtype) {
    case DataType::kInt64:
      reinterpret_cast<int64_t*>(data)[e] = v;
      return true;
    case DataType::kInt32:
      reinterpret_cast<int32_t*>(data)[e] = static_cast<int32_t>(v);
      return true;
    case DataType::kBool:
    case DataType::kUint8:
      data[e] = static_cast<char>(v != 0);
      return true;
    case DataType::kFp32:
      reinterpret_cast<float*>(data)[e] = static_cast<float>(v);
      return true;
    default:
      return false;
  }
}

// The probe batch: row 0 of length seq, row 1 of length seq / 2 (at least
// 1); the mask 1 at real positions and 0 at padded ones; at every position
// an input named like input_ids ids 1 to 5, every other input 0 and 1 (in
// any vocabulary, token types included), varying along the row, so that
// padded rows differ from one another and from the real ones (packing
// replaces what attentions read there by copies of a real row); then
// `zero_rows` rows of zeros in every input.
absl::StatusOr<std::vector<AlignedBuffer>> ProbeInputs(
    const ModelSignature& sig, int mask, int64_t seq, int64_t zero_rows = 0) {
  const int64_t lengths[kProbeRows] = {seq, std::max<int64_t>(1, seq / 2)};
  std::vector<AlignedBuffer> inputs(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSpec& spec = sig.inputs[i];
    const size_t bytes =
        (kProbeRows + zero_rows) * seq * ElementByteSize(spec.dtype);
    if (absl::Status s = inputs[i].Reserve(bytes); !s.ok()) return s;
    std::memset(inputs[i].data(), 0, bytes);
    const bool ids = spec.name.find("input_ids") != std::string::npos;
    for (int64_t b = 0; b < kProbeRows; ++b) {
      for (int64_t p = 0; p < seq; ++p) {
        const int64_t v = static_cast<int>(i) == mask ? p < lengths[b]
                          : ids                       ? 1 + (p * 7 + b) % 5
                                                      : (p * 3 + b + 1) % 2;
        if (!SetElement(spec.dtype, inputs[i].data(), b * seq + p, v)) {
          return absl::FailedPreconditionError(
              absl::StrCat("token packing: input '", spec.name, "' is of type ",
                           std::string(DataTypeName(spec.dtype)),
                           ", which the load-time check does not fill"));
        }
      }
    }
  }
  return inputs;
}

// Runs `model` for `shapes` on `inputs`; its outputs.
absl::StatusOr<std::vector<AlignedBuffer>> RunOnce(
    const std::shared_ptr<const Model>& model, const std::vector<Shape>& shapes,
    const std::vector<const char*>& inputs,
    std::shared_ptr<const ExecutionPlan>* plan) {
  auto built = ExecutionPlan::Build(model, shapes);
  if (!built.ok()) return built.status();
  *plan = *built;
  std::vector<AlignedBuffer> outputs((*plan)->num_outputs());
  std::vector<char*> out;
  for (int o = 0; o < (*plan)->num_outputs(); ++o) {
    if (absl::Status s = outputs[o].Reserve((*plan)->output_byte_size(o));
        !s.ok())
      return s;
    out.push_back(outputs[o].data());
  }
  AlignedBuffer arena;
  if (absl::Status s = arena.Reserve((*plan)->arena_bytes()); !s.ok()) return s;
  absl::Status s = (*plan)->Execute(inputs, out, arena.data());
  if (!s.ok()) return s;
  return outputs;
}

// Runs the packed form on the probe batch `in` ([rows, seq] each input,
// its mask at `mask`) with its indices; its outputs.
absl::StatusOr<std::vector<AlignedBuffer>> RunPacked(
    const std::shared_ptr<const Model>& packed, const ModelSignature& sig,
    int mask, int64_t rows, int64_t seq, std::vector<const char*> in,
    std::shared_ptr<const ExecutionPlan>* plan) {
  PackingIndices indices;
  absl::Status s = ComputePackingIndices(in[mask], sig.inputs[mask].dtype, rows,
                                         seq, &indices);
  if (!s.ok()) return s;
  std::vector<Shape> shapes(sig.inputs.size(), Shape{rows, seq});
  shapes.push_back({static_cast<int64_t>(indices.pack.size())});
  shapes.push_back({rows * seq});
  shapes.push_back({rows * seq});
  for (const std::vector<int64_t>* index :
       {&indices.pack, &indices.unpack, &indices.spread})
    in.push_back(reinterpret_cast<const char*>(index->data()));
  return RunOnce(packed, shapes, in, plan);
}

// OK when every output of the packed run (`got`, of a batch of the probe's
// rows then `zero_rows` more) equals the padded run's (`want`) at the
// probe's real positions, within kTolerance of its magnitude; else
// FailedPrecondition naming the output.
absl::Status Compare(const ExecutionPlan& padded_plan,
                     const std::vector<AlignedBuffer>& want,
                     const ExecutionPlan& packed_plan,
                     const std::vector<AlignedBuffer>& got, int64_t seq,
                     int64_t zero_rows) {
  const int64_t lengths[kProbeRows] = {seq, std::max<int64_t>(1, seq / 2)};
  for (int o = 0; o < padded_plan.num_outputs(); ++o) {
    const Shape& shape = padded_plan.output_shape(o);
    const size_t bytes = padded_plan.output_byte_size(o);
    Shape packed_shape = packed_plan.output_shape(o);
    if (zero_rows > 0 && !packed_shape.empty()) packed_shape[0] -= zero_rows;
    if (shape != packed_shape) {
      return absl::FailedPreconditionError(
          absl::StrCat("token packing: output '", padded_plan.output_name(o),
                       "' has another shape packed"));
    }
    const bool per_position =
        shape.size() >= 2 && shape[0] == kProbeRows && shape[1] == seq;
    const size_t row = per_position ? bytes / (kProbeRows * seq) : bytes;
    const bool floats = padded_plan.output_dtype(o) == DataType::kFp32;
    const char* a = want[o].data();
    const char* b = got[o].data();  // the probe's rows first
    float scale = 1.0f, worst = 0.0f;
    for (size_t at = 0; floats && at < bytes; at += sizeof(float)) {
      float x;
      std::memcpy(&x, a + at, sizeof x);
      scale = std::max(scale, std::fabs(x));
    }
    for (size_t at = 0; at < bytes; at += row) {
      const int64_t position = per_position ? at / row : 0;
      if (per_position && position % seq >= lengths[position / seq]) continue;
      if (!floats) {
        if (std::memcmp(a + at, b + at, row) != 0) worst = INFINITY;
        continue;
      }
      for (size_t e = 0; e < row; e += sizeof(float)) {
        float x, y;
        std::memcpy(&x, a + at + e, sizeof x);
        std::memcpy(&y, b + at + e, sizeof y);
        worst = std::max(worst, std::fabs(x - y));
        if (std::isnan(x) != std::isnan(y)) worst = INFINITY;
      }
    }
    if (!(worst <= kTolerance * scale)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "token packing: on a probe batch the packed model's output '",
          padded_plan.output_name(o),
          "' differs from the padded model's at real positions (max |diff| ",
          worst,
          "): positions are mixed outside the masked attentions, or "
          "the mask input is not 1 at real positions"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPackedAgreesWithPadded(
    const std::shared_ptr<const Model>& padded,
    const std::shared_ptr<const Model>& packed, int mask_input,
    bool* pads_with_zero_rows) {
  *pads_with_zero_rows = false;
  // The probe batch is small; on the loading thread, an OpenMP pool would
  // slow every executor's parallel regions (kernels/cpu/threading.h).
  const kernels::ScopedIntraOpThreads one_thread(1);
  const ModelSignature& sig = padded->signature();
  const Shape& dims = sig.inputs[mask_input].dims;
  const int64_t seq =
      dims.size() == 2 && dims[1] > 0 ? dims[1] : kDynamicProbeSeq;
  auto inputs = ProbeInputs(sig, mask_input, seq);
  if (!inputs.ok()) return inputs.status();
  const std::vector<Shape> shapes(sig.inputs.size(), Shape{kProbeRows, seq});
  std::vector<const char*> in;
  for (const AlignedBuffer& b : *inputs) in.push_back(b.data());
  std::shared_ptr<const ExecutionPlan> padded_plan, packed_plan;
  auto want = RunOnce(padded, shapes, in, &padded_plan);
  if (!want.ok()) return want.status();
  auto got =
      RunPacked(packed, sig, mask_input, kProbeRows, seq, in, &packed_plan);
  if (!got.ok()) return got.status();
  absl::Status s = Compare(*padded_plan, *want, *packed_plan, *got, seq, 0);
  if (!s.ok()) return s;

  // The probe again with a row of zeros after it (a mask row without
  // tokens): a device pads batches so.
  auto padded_inputs = ProbeInputs(sig, mask_input, seq, /*zero_rows=*/1);
  if (!padded_inputs.ok()) return padded_inputs.status();
  std::vector<const char*> padded_in;
  for (const AlignedBuffer& b : *padded_inputs) padded_in.push_back(b.data());
  std::shared_ptr<const ExecutionPlan> zero_rows_plan;
  auto with_zero_row = RunPacked(packed, sig, mask_input, kProbeRows + 1, seq,
                                 padded_in, &zero_rows_plan);
  *pads_with_zero_rows =
      with_zero_row.ok() &&
      Compare(*padded_plan, *want, *zero_rows_plan, *with_zero_row, seq, 1)
          .ok();
  return absl::OkStatus();
}

}  // namespace coalesce
