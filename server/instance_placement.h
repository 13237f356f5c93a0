// Triton's instance defaults, applied to a model's config before the model
// loads (so that its graph is optimized for where it will run):
//   - no instance_group: one group of count 1 and KIND_AUTO, which gives an
//     instance on each visible GPU when the GPUs can run the model, else
//     one on the CPU (Triton's rule);
//   - a KIND_AUTO group (also one that names no kind: KIND_AUTO is the
//     enum's 0) becomes KIND_CPU at once when no GPU is usable, with a log
//     line giving the reason; with a usable GPU it stays KIND_AUTO, and the
//     executor factory (executor_factory.h) falls back to the CPU, saying
//     why, when the GPU cannot run the model.
// KIND_CPU and KIND_GPU groups are left as they are.
#ifndef COALESCE_SERVER_INSTANCE_PLACEMENT_H_
#define COALESCE_SERVER_INSTANCE_PLACEMENT_H_

#include <functional>

#include "absl/status/status.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// OK when the device plugin (DefaultCudaPluginPath) loads and lists at
// least one GPU; else the reason (no plugin, no driver, no device).
absl::Status UsableGpu();

// REQUIRES: usable_gpu is callable; it is called at most once.
void ApplyInstanceDefaults(inference::ModelConfig* config,
                           const std::function<absl::Status()>& usable_gpu);

}  // namespace coalesce

#endif  // COALESCE_SERVER_INSTANCE_PLACEMENT_H_
