// Turning a config's sequence_batching into the batching layer's
// SequenceOptions, and the scheduler options of the DynamicBatcher the
// sequences run on.
#ifndef COALESCE_SERVER_SEQUENCE_CONFIG_H_
#define COALESCE_SERVER_SEQUENCE_CONFIG_H_

#include <filesystem>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "batching/scheduler_options.h"
#include "batching/sequence_options.h"
#include "engine/tensor_spec.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// The model tensors sequence batching sets or captures (control inputs,
// state inputs and outputs): clients neither send nor see them, so they are
// left out of the config's input and output lists. Empty without
// sequence_batching.
std::set<std::string> SequenceTensorNames(const inference::ModelConfig& config);

// InvalidArgument naming the field for what this server refuses or Triton
// calls an error: each control_input needs exactly one control with its
// false/true pair (two values) or, for CORRID, a data_type; iterative
// sequences; state without dims; more than one initial_state.
absl::Status CheckSequenceBatching(const inference::ModelConfig& config);

// The SequenceOptions of a completed config with sequence_batching:
// - kDirect (the default) with max_batch_size (at least 1) places per
//   instance; kOldest with max_candidate_sequences places (max_batch_size
//   per instance when 0);
// - max_sequence_idle_microseconds, one second when 0;
// - initial states from zero_data or `initial_state/<data_file>` in
//   `model_dir` (a name leaving that folder, a missing file or a size not
//   matching the dims is InvalidArgument).
absl::StatusOr<SequenceOptions> SequenceOptionsFromConfig(
    const inference::ModelConfig& config,
    const std::filesystem::path& model_dir);

// Adds the control and state tensors to `scheduler` (built by
// SchedulerOptionsFromConfig from the client tensors) with the model's own
// types and dims, keeping the signature's order, and takes the batching
// delay and preferred sizes from the strategy. InvalidArgument naming a model
// input that neither the config nor sequence batching provides.
absl::Status AddSequenceTensors(const inference::ModelConfig& config,
                                const ModelSignature& signature,
                                SchedulerOptions* scheduler);

}  // namespace coalesce

#endif  // COALESCE_SERVER_SEQUENCE_CONFIG_H_
