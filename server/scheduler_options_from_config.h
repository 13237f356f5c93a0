// Turning a completed ModelConfig into the batching layer's SchedulerOptions.
#ifndef COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_
#define COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_

#include "absl/status/statusor.h"
#include "batching/clock.h"
#include "batching/scheduler_options.h"
#include "engine/tensor_spec.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// The model's latency target, parameters { key: "latency_target_p99_ms" }
// (docs/batching.md, "Latency target"): zero when absent. InvalidArgument
// naming the parameter when its value is not a positive number of
// milliseconds, or when the model does not batch dynamically
// (max_batch_size 0, no dynamic_batching, or sequence_batching).
absl::StatusOr<Clock::Duration> LatencyTargetFromConfig(
    const inference::ModelConfig& config);

// REQUIRES: CompleteModelConfig(signature, &config) returned OK, and
// LatencyTargetFromConfig(config) too.
// Inputs and outputs come out in the signature's (the executor's) order.
SchedulerOptions SchedulerOptionsFromConfig(
    const inference::ModelConfig& config, const ModelSignature& signature,
    Clock* clock);

}  // namespace coalesce

#endif  // COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_
