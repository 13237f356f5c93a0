#include "server/executor_factory.h"

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/cpu_executor.h"
#include "engine/device/gpu_instance.h"
#include "server/executor_options_from_config.h"
#include "server/resource_limits.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

using Instances = std::vector<std::unique_ptr<ExecutorInstance>>;
using Group = inference::ModelInstanceGroup;

absl::Status AddCpuInstances(const std::shared_ptr<const Model>& model,
                             const inference::ModelConfig& config,
                             const Group& group, Instances* instances) {
  // The container's CPU quota, not the host's core count.
  const int cores = CpuLimit();
  auto options = CpuExecutorOptionsFromConfig(config, cores);
  if (!options.ok()) return options.status();
  for (int i = 0; i < std::max(group.count(), 1); ++i) {
    auto instance = CreateCpuExecutor(model, *options);
    if (!instance.ok()) return instance.status();
    instances->push_back(*std::move(instance));
  }
  return absl::OkStatus();
}

// The GPUs of `group` as the plugin sees them; FailedPrecondition with the
// plugin's reason when there are none, InvalidArgument for a listed GPU that
// does not exist.
absl::StatusOr<std::vector<DeviceInfo>> GroupGpus(
    const Group& group, const ExecutorFactoryOptions& options) {
  auto plugin = LoadDevicePlugin(options.cuda_plugin_path);
  if (!plugin.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU executor: ", plugin.status().message(),
                     plugin.status().code() == absl::StatusCode::kNotFound
                         ? " (the server was built without the CUDA toolkit)"
                         : ""));
  }
  auto devices = (*plugin)->Devices();
  if (!devices.ok()) {
    return absl::FailedPreconditionError(devices.status().message());
  }
  if (group.gpus_size() == 0) return devices;
  std::vector<DeviceInfo> chosen;
  for (int gpu : group.gpus()) {
    auto it =
        std::find_if(devices->begin(), devices->end(),
                     [gpu](const DeviceInfo& d) { return d.ordinal == gpu; });
    if (it == devices->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU ", gpu, " is listed but only ", devices->size(),
                       " CUDA devices exist"));
    }
    chosen.push_back(*it);
  }
  return chosen;
}

// String tensors live only in the CPU engine: Unimplemented (so KIND_AUTO
// falls back to the CPU) naming the first BYTES input or output.
absl::Status CheckNoStrings(const ModelSignature& signature) {
  for (const auto* specs : {&signature.inputs, &signature.outputs}) {
    for (const TensorSpec& spec : *specs) {
      if (spec.dtype != DataType::kBytes) continue;
      return absl::UnimplementedError(absl::StrCat(
          "tensor '", spec.name,
          "' is a string (BYTES) tensor; those run on the CPU only"));
    }
  }
  return absl::OkStatus();
}

// By GPU ordinal: what the model's instances there share (its weights).
using GpuShares = std::map<int, GpuModelShare>;

absl::Status AddGpuInstances(const std::shared_ptr<const Model>& model,
                             const inference::ModelConfig& config,
                             const Group& group,
                             const ExecutorFactoryOptions& options,
                             GpuShares* shares, Instances* instances) {
  auto gpus = GroupGpus(group, options);
  if (!gpus.ok()) return gpus.status();
  if (absl::Status s = CheckNoStrings(model->signature()); !s.ok()) return s;
  auto instance_options = GpuInstanceOptionsFromConfig(config);
  if (!instance_options.ok()) return instance_options.status();
  instance_options->kernels.tuning_cache = options.tuning_cache;
  auto plugin = LoadDevicePlugin(options.cuda_plugin_path);
  if (!plugin.ok()) return plugin.status();
  Instances created;
  for (const DeviceInfo& gpu : *gpus) {
    for (int i = 0; i < std::max(group.count(), 1); ++i) {
      auto instance =
          CreateGpuInstance(**plugin, gpu.ordinal, model, *instance_options,
                            &(*shares)[gpu.ordinal]);
      if (instance.ok()) {
        created.push_back(*std::move(instance));
        continue;
      }
      return absl::Status(instance.status().code(),
                          absl::StrCat("cuda:", gpu.ordinal, " (", gpu.name,
                                       "): ", instance.status().message()));
    }
  }
  spdlog::info(
      "model '{}': {} GPU instance(s) of instance_group '{}' on {}",
      config.name(), created.size(), group.name(),
      absl::StrJoin(*gpus, ", ", [&](std::string* out, const DeviceInfo& d) {
        const auto& constants = (*shares)[d.ordinal].constants;
        const double mib =
            constants == nullptr ? 0 : constants->device_bytes() / 1048576.0;
        absl::StrAppend(out, "cuda:", d.ordinal, " ", d.name,
                        absl::StrFormat(" (weights %.2f MiB, held once for "
                                        "the GPU's instances)",
                                        mib));
      }));
  for (auto& instance : created) instances->push_back(std::move(instance));
  return absl::OkStatus();
}

absl::Status WithGroup(const absl::Status& status, const Group& group) {
  return absl::Status(
      status.code(),
      absl::StrCat("instance_group '", group.name(), "' (",
                   Group::Kind_Name(group.kind()), "): ", status.message()));
}

}  // namespace

absl::StatusOr<Instances> CreateExecutorInstances(
    const std::shared_ptr<const Model>& model, inference::ModelConfig* config,
    const ExecutorFactoryOptions& options) {
  Instances instances;
  GpuShares shares;
  for (Group& group : *config->mutable_instance_group()) {
    absl::Status status;
    switch (group.kind()) {
      case Group::KIND_GPU:
        status = AddGpuInstances(model, *config, group, options, &shares,
                                 &instances);
        break;
      case Group::KIND_AUTO: {
        absl::Status gpu = AddGpuInstances(model, *config, group, options,
                                           &shares, &instances);
        if (gpu.ok()) {
          group.set_kind(Group::KIND_GPU);
          break;
        }
        if (gpu.code() == absl::StatusCode::kInvalidArgument) {
          status = gpu;  // a config error (a listed GPU that does not exist)
          break;
        }
        spdlog::info(
            "model '{}': instance_group '{}' is KIND_AUTO; using the "
            "CPU: {}",
            config->name(), group.name(), std::string(gpu.message()));
        group.set_kind(Group::KIND_CPU);
        status = AddCpuInstances(model, *config, group, &instances);
        break;
      }
      default:
        status = AddCpuInstances(model, *config, group, &instances);
        break;
    }
    if (!status.ok()) return WithGroup(status, group);
  }
  return instances;
}

}  // namespace coalesce
