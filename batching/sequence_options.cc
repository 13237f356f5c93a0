#include "batching/sequence_options.h"

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

absl::Status CheckTensor(const std::vector<TensorSpec>& specs,
                         const std::string& name, const char* what,
                         DataType dtype, const Shape& dims) {
  const TensorSpec* spec = FindTensorSpec(specs, name);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "' is not a tensor of the model"));
  }
  if (spec->dtype != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "': the model's data type is ",
                     std::string(DataTypeName(spec->dtype)),
                     ", the config says ", std::string(DataTypeName(dtype))));
  }
  if (spec->dims != dims) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "' must have dims ", ShapeToString(dims),
                     " (without the batch dimension), the model has ",
                     ShapeToString(spec->dims)));
  }
  return absl::OkStatus();
}

absl::Status CheckControl(const SequenceControl& control,
                          const SchedulerOptions& scheduler) {
  if (absl::Status s = CheckTensor(scheduler.inputs, control.input_name,
                                   "control input", control.dtype, Shape{1});
      !s.ok()) {
    return s;
  }
  if (control.kind == SequenceControl::Kind::kCorrelationId) {
    switch (control.dtype) {
      case DataType::kUint64:
      case DataType::kInt64:
      case DataType::kUint32:
      case DataType::kInt32:
      case DataType::kBytes:
        return absl::OkStatus();
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "control input '", control.input_name,
            "': a correlation ID must be UINT64, INT64, UINT32, INT32 or "
            "STRING"));
    }
  }
  const size_t element = ElementByteSize(control.dtype);
  if (element == 0 || control.false_value.size() != element ||
      control.true_value.size() != element) {
    return absl::InvalidArgumentError(
        absl::StrCat("control input '", control.input_name,
                     "' needs one false and one true value"));
  }
  return absl::OkStatus();
}

absl::Status CheckState(const SequenceState& state,
                        const SchedulerOptions& scheduler) {
  for (int64_t d : state.dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state '", state.input_name, "': variable dims are not supported"));
    }
  }
  if (ElementByteSize(state.dtype) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state '", state.input_name, "': BYTES state is not supported"));
  }
  if (absl::Status s = CheckTensor(scheduler.inputs, state.input_name,
                                   "state input", state.dtype, state.dims);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTensor(scheduler.outputs, state.output_name,
                                   "state output", state.dtype, state.dims);
      !s.ok()) {
    return s;
  }
  int64_t count = 1;
  for (int64_t d : state.dims) count *= d;
  if (!state.initial.empty() &&
      state.initial.size() !=
          static_cast<size_t>(count) * ElementByteSize(state.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("state '", state.input_name, "': initial state has ",
                     state.initial.size(), " bytes, the dims need ",
                     count * ElementByteSize(state.dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSequenceOptions(const SequenceOptions& sequence,
                                     const SchedulerOptions& scheduler) {
  if (sequence.max_active_sequences < 1) {
    return absl::InvalidArgumentError(
        "at least one sequence must be allowed to be active");
  }
  for (const SequenceControl& control : sequence.controls) {
    if (absl::Status s = CheckControl(control, scheduler); !s.ok()) return s;
  }
  for (const SequenceState& state : sequence.states) {
    if (absl::Status s = CheckState(state, scheduler); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace coalesce
