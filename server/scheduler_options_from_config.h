// Turning a completed ModelConfig into the batching layer's SchedulerOptions.
#ifndef COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_
#define COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_

#include "batching/clock.h"
#include "batching/scheduler_options.h"
#include "engine/tensor_spec.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// REQUIRES: CompleteModelConfig(signature, &config) returned OK.
// Inputs and outputs come out in the signature's (the executor's) order.
SchedulerOptions SchedulerOptionsFromConfig(
    const inference::ModelConfig& config, const ModelSignature& signature,
    Clock* clock);

}  // namespace coalesce

#endif  // COALESCE_SERVER_SCHEDULER_OPTIONS_FROM_CONFIG_H_
