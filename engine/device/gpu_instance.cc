#include "engine/device/gpu_instance.h"

#include <utility>

#include "engine/device/graph_program.h"
#include "engine/neutral_planner.h"

namespace coalesce {

absl::StatusOr<std::unique_ptr<PipelinedExecutor>> CreateGpuInstance(
    DevicePlugin& plugin, int ordinal,
    const std::shared_ptr<const Model>& model,
    const GpuInstanceOptions& options, GpuModelShare* share) {
  GpuModelShare own;
  if (share == nullptr) share = &own;
  if (share->device == nullptr) {
    auto device = plugin.OpenDevice(ordinal);
    if (!device.ok()) return device.status();
    share->device = *std::move(device);
    share->constants = std::make_shared<DeviceConstants>(share->device);
  }
  auto kernels = plugin.CreateKernels(share->device, options.kernels);
  if (!kernels.ok()) return kernels.status();
  auto program = CreateGraphProgram(
      share->device, *std::move(kernels),
      {model->signature(), MakeNeutralPlanner(model), ModelNodes(*model)},
      options.program, share->constants);
  if (!program.ok()) return program.status();
  PipelinedExecutorOptions pipeline = options.pipeline;
  pipeline.device_ordinal = ordinal;  // shared device memory on this GPU
  return CreatePipelinedExecutor(share->device, *std::move(program), pipeline);
}

}  // namespace coalesce
