// SequenceOptions: how a SequenceBatcher runs a stateful model, mirroring
// ModelConfig's sequence_batching: the control inputs the server fills in
// for each request (START, END, READY, CORRID), the implicit state it carries
// from one request of a sequence to the next, how long an idle sequence keeps
// its place, and how many sequences may be active at once. Plain value types;
// ValidateSequenceOptions says whether a set is usable with a model's
// SchedulerOptions.
#ifndef COALESCE_BATCHING_SEQUENCE_OPTIONS_H_
#define COALESCE_BATCHING_SEQUENCE_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "batching/clock.h"
#include "batching/scheduler_options.h"
#include "engine/data_type.h"
#include "engine/shape.h"

namespace coalesce {

// One control input: a model input of item shape [1] that the server sets.
struct SequenceControl {
  enum class Kind { kStart, kEnd, kReady, kCorrelationId };
  std::string input_name;
  Kind kind = Kind::kStart;
  DataType dtype = DataType::kInvalid;
  // kStart/kEnd/kReady: one element of `dtype` each (the config's
  // *_false_true pair). Unused for kCorrelationId.
  std::string false_value, true_value;
};

// One implicit state: model input `input_name` receives what output
// `output_name` produced for the sequence's previous request.
struct SequenceState {
  std::string input_name, output_name;
  DataType dtype = DataType::kInvalid;
  Shape dims;  // Without the batch dimension; all known.
  // The state a sequence starts from: dims' element count * element size
  // bytes; empty = all zeros.
  std::string initial;
};

struct SequenceOptions {
  // kDirect: a sequence holds one of max_active_sequences batch slots from
  // its START to its END (or idle release); kOldest: the same bound is
  // Triton's max_candidate_sequences. Both batch ready requests of different
  // sequences together, at most one per sequence per batch (see
  // docs/batching.md, "Sequence batching").
  enum class Strategy { kDirect, kOldest };
  Strategy strategy = Strategy::kDirect;
  // Sequences active at once; later STARTs wait, in arrival order.
  int max_active_sequences = 1;
  // A sequence with no request for this long is released.
  Clock::Duration max_sequence_idle{std::chrono::seconds(1)};
  std::vector<SequenceControl> controls;
  std::vector<SequenceState> states;
};

// OK when `sequence` fits `scheduler` (the options of the DynamicBatcher the
// sequences run on, whose inputs and outputs include the control and state
// tensors): every control input and state tensor is one of the scheduler's
// with the same dtype (controls of item shape [1], states of `dims`);
// true/false values are one element; at least one active sequence. Else
// InvalidArgument naming the tensor.
absl::Status ValidateSequenceOptions(const SequenceOptions& sequence,
                                     const SchedulerOptions& scheduler);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_SEQUENCE_OPTIONS_H_
