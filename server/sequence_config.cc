#include "server/sequence_config.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

using inference::ModelConfig;
using inference::ModelSequenceBatching;
using Control = ModelSequenceBatching::Control;

SequenceControl::Kind KindOf(Control::Kind kind) {
  switch (kind) {
    case Control::CONTROL_SEQUENCE_START:
      return SequenceControl::Kind::kStart;
    case Control::CONTROL_SEQUENCE_END:
      return SequenceControl::Kind::kEnd;
    case Control::CONTROL_SEQUENCE_READY:
      return SequenceControl::Kind::kReady;
    default:
      return SequenceControl::Kind::kCorrelationId;
  }
}

template <typename T>
std::string Bytes(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

// The control's false/true pair as bytes of its type; empty when absent.
template <typename Values>
bool TakePair(const Values& values, DataType dtype, SequenceControl* out) {
  if (values.size() != 2) return false;
  out->dtype = dtype;
  out->false_value = Bytes(values[0]);
  out->true_value = Bytes(values[1]);
  return true;
}

SequenceControl ToControl(const std::string& name, const Control& control) {
  SequenceControl out;
  out.input_name = name;
  out.kind = KindOf(control.kind());
  if (out.kind == SequenceControl::Kind::kCorrelationId) {
    out.dtype = static_cast<DataType>(control.data_type());
    return out;
  }
  TakePair(control.int32_false_true(), DataType::kInt32, &out) ||
      TakePair(control.fp32_false_true(), DataType::kFp32, &out) ||
      TakePair(control.bool_false_true(), DataType::kBool, &out);
  return out;
}

absl::Status CheckControl(const ModelSequenceBatching::ControlInput& input) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence_batching control_input '", input.name(), "': ", what));
  };
  if (input.control_size() != 1) {
    return error("needs exactly one control");
  }
  const Control& c = input.control(0);
  if (c.kind() == Control::CONTROL_SEQUENCE_CORRID) {
    if (c.data_type() == inference::TYPE_INVALID) {
      return error("a CONTROL_SEQUENCE_CORRID control needs a data_type");
    }
    return absl::OkStatus();
  }
  const int pairs = (c.int32_false_true_size() > 0) +
                    (c.fp32_false_true_size() > 0) +
                    (c.bool_false_true_size() > 0);
  if (pairs != 1 || ToControl(input.name(), c).false_value.empty()) {
    return error(
        "needs one of int32_false_true, fp32_false_true or bool_false_true "
        "with two values");
  }
  return absl::OkStatus();
}

int InstanceCount(const ModelConfig& config) {
  int count = 0;
  for (const auto& group : config.instance_group()) {
    count += std::max(1, group.count());
  }
  return std::max(1, count);
}

absl::StatusOr<std::string> ReadInitialState(
    const ModelSequenceBatching::State& state,
    const std::filesystem::path& model_dir) {
  if (state.initial_state_size() == 0) return std::string();
  const auto& initial = state.initial_state(0);
  if (initial.state_data_case() !=
      ModelSequenceBatching::InitialState::kDataFile) {
    return std::string();  // zero_data
  }
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("state '", state.input_name(), "': initial_state ",
                     "data_file '", initial.data_file(), "' ", what));
  };
  const std::filesystem::path name(initial.data_file());
  if (name.empty() || name.is_absolute() ||
      name.lexically_normal().string().starts_with("..")) {
    return error("must name a file inside initial_state/");
  }
  std::ifstream in(model_dir / "initial_state" / name, std::ios::binary);
  if (!in) return error("cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `spec` as the batcher sees it: without the batch dim when batching.
TensorSpec ItemSpec(TensorSpec spec, bool batching) {
  if (batching && !spec.dims.empty()) spec.dims.erase(spec.dims.begin());
  return spec;
}

// `current` plus the signature's tensors named in `extra`, in signature
// order; InvalidArgument for a signature tensor in neither.
absl::StatusOr<std::vector<TensorSpec>> WithExtra(
    const std::vector<TensorSpec>& signature,
    const std::vector<TensorSpec>& current, const std::set<std::string>& extra,
    bool batching, const char* kind) {
  std::vector<TensorSpec> merged;
  for (const TensorSpec& spec : signature) {
    if (const TensorSpec* c = FindTensorSpec(current, spec.name)) {
      merged.push_back(*c);
    } else if (extra.contains(spec.name)) {
      merged.push_back(ItemSpec(spec, batching));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", kind, " '", spec.name,
                       "' is neither in the config nor a sequence control or "
                       "state tensor"));
    }
  }
  return merged;
}

}  // namespace

std::set<std::string> SequenceTensorNames(const ModelConfig& config) {
  std::set<std::string> names;
  if (!config.has_sequence_batching()) return names;
  const auto& sb = config.sequence_batching();
  for (const auto& input : sb.control_input()) names.insert(input.name());
  for (const auto& state : sb.state()) {
    names.insert(state.input_name());
    names.insert(state.output_name());
  }
  return names;
}

absl::Status CheckSequenceBatching(const ModelConfig& config) {
  const auto& sb = config.sequence_batching();
  if (sb.iterative_sequence()) {
    return absl::InvalidArgumentError(
        "sequence_batching.iterative_sequence is not supported");
  }
  for (const auto& input : sb.control_input()) {
    if (absl::Status s = CheckControl(input); !s.ok()) return s;
  }
  for (const auto& state : sb.state()) {
    if (state.dims_size() == 0 || state.initial_state_size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence_batching state '", state.input_name(),
                       "' needs dims and at most one initial_state"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SequenceOptions> SequenceOptionsFromConfig(
    const ModelConfig& config, const std::filesystem::path& model_dir) {
  const auto& sb = config.sequence_batching();
  SequenceOptions options;
  const int places =
      std::max(1, config.max_batch_size()) * InstanceCount(config);
  options.max_active_sequences = places;
  if (sb.has_oldest()) {
    options.strategy = SequenceOptions::Strategy::kOldest;
    if (sb.oldest().max_candidate_sequences() > 0) {
      options.max_active_sequences = sb.oldest().max_candidate_sequences();
    }
  }
  if (sb.max_sequence_idle_microseconds() > 0) {
    options.max_sequence_idle =
        std::chrono::microseconds(sb.max_sequence_idle_microseconds());
  }
  for (const auto& input : sb.control_input()) {
    options.controls.push_back(ToControl(input.name(), input.control(0)));
  }
  for (const auto& state : sb.state()) {
    auto initial = ReadInitialState(state, model_dir);
    if (!initial.ok()) return initial.status();
    options.states.push_back(SequenceState{
        state.input_name(), state.output_name(),
        static_cast<DataType>(state.data_type()),
        Shape(state.dims().begin(), state.dims().end()), *std::move(initial)});
  }
  return options;
}

absl::Status AddSequenceTensors(const ModelConfig& config,
                                const ModelSignature& signature,
                                SchedulerOptions* scheduler) {
  const std::set<std::string> extra = SequenceTensorNames(config);
  const bool batching = config.max_batch_size() > 0;
  auto inputs =
      WithExtra(signature.inputs, scheduler->inputs, extra, batching, "input");
  if (!inputs.ok()) return inputs.status();
  auto outputs = WithExtra(signature.outputs, scheduler->outputs, extra,
                           batching, "output");
  if (!outputs.ok()) return outputs.status();
  scheduler->inputs = *std::move(inputs);
  scheduler->outputs = *std::move(outputs);
  // Ready requests of different sequences batch like any others.
  const auto& sb = config.sequence_batching();
  scheduler->dynamic_batching = batching;
  if (sb.has_oldest()) {
    scheduler->max_queue_delay =
        std::chrono::microseconds(sb.oldest().max_queue_delay_microseconds());
    scheduler->preferred_batch_sizes.assign(
        sb.oldest().preferred_batch_size().begin(),
        sb.oldest().preferred_batch_size().end());
  } else {
    scheduler->max_queue_delay =
        std::chrono::microseconds(sb.direct().max_queue_delay_microseconds());
  }
  return absl::OkStatus();
}

}  // namespace coalesce
