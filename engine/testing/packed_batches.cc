#include "engine/testing/packed_batches.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce::testing {

absl::StatusOr<std::vector<FloatOutput>> RunOnCpu(
    std::shared_ptr<const Model> model, const std::vector<HostTensor>& inputs,
    const CpuExecutorOptions& options) {
  auto exec = CreateCpuExecutor(model, options);
  if (!exec.ok()) return exec.status();
  return RunBatch(**exec, inputs, model->signature().outputs.size());
}

absl::StatusOr<std::vector<FloatOutput>> RunBatch(
    ExecutorInstance& exec, const std::vector<::coalesce::HostTensor>& inputs,
    size_t num_outputs, int slot_index) {
  BatchSlot* slot = exec.slot(slot_index);
  std::vector<Shape> shapes;
  for (const ::coalesce::HostTensor& t : inputs) shapes.push_back(t.shape);
  if (absl::Status s = slot->SetInputShapes(shapes); !s.ok()) return s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (slot->input_byte_size(i) != inputs[i].bytes.size()) {
      return absl::InternalError(absl::StrCat(
          "input ", i, " has ", slot->input_byte_size(i), " bytes staged"));
    }
    std::memcpy(slot->input_data(i), inputs[i].bytes.data(),
                inputs[i].bytes.size());
  }
  if (absl::Status s = exec.Submit(slot)->Wait(); !s.ok()) return s;
  std::vector<FloatOutput> outputs;
  for (size_t i = 0; i < num_outputs; ++i) {
    FloatOutput out;
    out.shape = slot->output_shape(i);
    out.values.resize(slot->output_byte_size(i) / sizeof(float));
    std::memcpy(out.values.data(), slot->output_data(i),
                out.values.size() * sizeof(float));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

absl::StatusOr<std::vector<::coalesce::HostTensor>> MixedLengthInputs(
    const std::string& dir, const std::vector<int64_t>& lengths, int64_t* seq) {
  auto first = ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/input_0.pb"));
  if (!first.ok()) return first.status();
  if (first->shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(first->name, " is not int64 [1, S]"));
  }
  std::vector<uint8_t> real;
  for (int64_t length : lengths) {
    for (int64_t s = 0; s < first->shape[1]; ++s) real.push_back(s < length);
  }
  return MaskedInputs(dir, real, static_cast<int64_t>(lengths.size()), seq);
}

absl::StatusOr<std::vector<::coalesce::HostTensor>> MaskedInputs(
    const std::string& dir, const std::vector<uint8_t>& real, int64_t batch,
    int64_t* seq) {
  std::vector<::coalesce::HostTensor> inputs;
  for (int i = 0;; ++i) {
    auto t =
        ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/input_", i, ".pb"));
    if (!t.ok()) break;
    if (t->dtype != DataType::kInt64 || t->shape.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(t->name, " is not int64 [1, S]"));
    }
    *seq = t->shape[1];
    std::vector<int64_t> first(*seq);
    std::memcpy(first.data(), t->bytes.data(), *seq * sizeof(int64_t));
    if (static_cast<int64_t>(real.size()) != batch * *seq) {
      return absl::InvalidArgumentError(
          absl::StrCat(real.size(), " positions for ", batch, " x ", *seq));
    }
    const int64_t top = *std::max_element(first.begin(), first.end());
    std::vector<int64_t> v;
    for (int64_t b = 0; b < batch; ++b) {
      const uint8_t* row = real.data() + b * *seq;
      int64_t last = -1;  // the row's last real position
      for (int64_t s = 0; s < *seq; ++s)
        if (row[s] != 0) last = s;
      for (int64_t s = 0; s < *seq; ++s) {
        if (t->name == "attention_mask") {
          v.push_back(row[s] != 0 ? 1 : 0);
        } else if (t->name == "input_ids") {
          v.push_back(s == last ? top : row[s] != 0 ? first[s] : 0);
        } else {
          v.push_back(row[s] != 0 ? first[s] : 0);
        }
      }
    }
    t->shape = {batch, *seq};
    t->bytes.assign(reinterpret_cast<const char*>(v.data()),
                    v.size() * sizeof(int64_t));
    inputs.push_back(*std::move(t));
  }
  if (inputs.empty()) {
    return absl::NotFoundError(absl::StrCat("no inputs in ", dir));
  }
  return inputs;
}

std::string CompareAtRealPositions(const std::vector<FloatOutput>& padded,
                                   const std::vector<FloatOutput>& packed,
                                   const std::vector<int64_t>& lengths,
                                   int64_t seq, float tolerance) {
  std::vector<uint8_t> real;
  for (int64_t length : lengths) {
    for (int64_t s = 0; s < seq; ++s) real.push_back(s < length);
  }
  return CompareAtRealPositions(padded, packed, real,
                                static_cast<int64_t>(lengths.size()), seq,
                                tolerance);
}

std::string CompareAtRealPositions(const std::vector<FloatOutput>& padded,
                                   const std::vector<FloatOutput>& packed,
                                   const std::vector<uint8_t>& real,
                                   int64_t batch, int64_t seq,
                                   float tolerance) {
  if (padded.size() != packed.size()) return "output counts differ";
  std::string problems;
  for (size_t o = 0; o < padded.size(); ++o) {
    const FloatOutput& a = padded[o];
    const FloatOutput& b = packed[o];
    if (a.shape != b.shape || a.values.size() != b.values.size() ||
        a.values.empty()) {
      absl::StrAppend(&problems, "output ", o, ": shapes differ; ");
      continue;
    }
    const bool per_position =
        a.shape.size() >= 2 && a.shape[0] == batch && a.shape[1] == seq;
    const size_t row = per_position ? a.values.size() / (batch * seq) : 1;
    float scale = 1.0f, worst = 0.0f;
    for (float v : a.values) scale = std::max(scale, std::fabs(v));
    bool padded_nonzero = false;
    int64_t packed_nonzero = 0;
    for (size_t i = 0; i < a.values.size(); ++i) {
      const int64_t position = static_cast<int64_t>(i / row);
      if (!per_position || real[position]) {
        worst = std::max(worst, std::fabs(a.values[i] - b.values[i]));
      } else {
        packed_nonzero += b.values[i] != 0.0f;
        padded_nonzero = padded_nonzero || a.values[i] != 0.0f;
      }
    }
    if (!(worst <= tolerance * scale)) {
      absl::StrAppend(&problems, "output ", o, ": max diff ", worst,
                      " at real positions; ");
    }
    if (packed_nonzero > 0) {
      absl::StrAppend(&problems, "output ", o, ": ", packed_nonzero,
                      " padded elements not zero; ");
    }
    if (per_position && !padded_nonzero) {
      absl::StrAppend(&problems, "output ", o,
                      ": the padded run's padded positions are all zero; ");
    }
  }
  return problems;
}

}  // namespace coalesce::testing
