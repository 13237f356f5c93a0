#include "server/instance_placement.h"

#include <optional>
#include <string>
#include <vector>

#include "engine/device/plugin_loader.h"
#include "spdlog/spdlog.h"

namespace coalesce {

absl::Status UsableGpu() {
  absl::StatusOr<DevicePlugin*> plugin =
      LoadDevicePlugin(DefaultCudaPluginPath());
  if (!plugin.ok()) return plugin.status();
  absl::StatusOr<std::vector<DeviceInfo>> devices = (*plugin)->Devices();
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return absl::FailedPreconditionError("no GPU");
  return absl::OkStatus();
}

void ApplyInstanceDefaults(inference::ModelConfig* config,
                           const std::function<absl::Status()>& usable_gpu) {
  using Group = inference::ModelInstanceGroup;
  if (config->instance_group_size() == 0) {
    Group* group = config->add_instance_group();
    group->set_count(1);
    group->set_kind(Group::KIND_AUTO);
  }
  std::optional<absl::Status> gpu;
  for (int i = 0; i < config->instance_group_size(); ++i) {
    Group* group = config->mutable_instance_group(i);
    if (group->kind() != Group::KIND_AUTO) continue;
    if (!gpu.has_value()) gpu = usable_gpu();
    if (gpu->ok()) continue;
    // Named as model_config_completion.cc will name it.
    const std::string name = group->name().empty()
                                 ? config->name() + "_" + std::to_string(i)
                                 : group->name();
    spdlog::info(
        "model '{}': instance_group '{}' is KIND_AUTO; using the CPU: {}",
        config->name(), name, std::string(gpu->message()));
    group->set_kind(Group::KIND_CPU);
  }
}

}  // namespace coalesce
