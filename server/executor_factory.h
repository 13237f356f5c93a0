// Creating a model's executor instances from its instance groups: the one
// place that maps instance_group.kind to a device.
//
//   KIND_CPU   `count` CPU executors (threads shared among all the model's
//              instances: executor_options_from_config.h).
//   KIND_GPU   `count` instances on each GPU listed in `gpus` (every GPU when
//              none is listed), through the CUDA plugin, which the server
//              loads only here. Each instance: a device context and kernels
//              from the plugin, the model's GraphProgram on them
//              (engine/device/graph_program.h) and a PipelinedExecutor (two
//              slots unless the `double_buffering` parameter is "false").
//              Without a usable GPU the model fails to load with
//              FailedPrecondition and the plugin's reason (no plugin, no
//              driver, no device, no cuBLASLt); a model with nodes the GPU
//              cannot run fails with Unimplemented naming every one.
//   KIND_AUTO  GPU instances when that works, else CPU ones; a log line says
//              which was chosen and why.
// Each group's kind in `config` is set to the kind it got, so ModelConfig
// reports what runs.
#ifndef COALESCE_SERVER_EXECUTOR_FACTORY_H_
#define COALESCE_SERVER_EXECUTOR_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/plugin_loader.h"
#include "engine/device/tuning_cache.h"
#include "engine/executor.h"
#include "engine/model.h"
#include "proto/model_config.pb.h"

namespace coalesce {

struct ExecutorFactoryOptions {
  std::string cuda_plugin_path = DefaultCudaPluginPath();
  // Shared by the model's GPU instances (DeviceKernelOptions::tuning_cache);
  // null: each instance measures for itself and keeps nothing.
  std::shared_ptr<TuningCache> tuning_cache;
};

// REQUIRES: `config` completed (model_config_completion.h).
absl::StatusOr<std::vector<std::unique_ptr<ExecutorInstance>>>
CreateExecutorInstances(const std::shared_ptr<const Model>& model,
                        inference::ModelConfig* config,
                        const ExecutorFactoryOptions& options);

}  // namespace coalesce

#endif  // COALESCE_SERVER_EXECUTOR_FACTORY_H_
