#include "engine/device/gpu_instance.h"

#include <utility>

#include "engine/device/graph_program.h"
#include "engine/neutral_planner.h"

namespace coalesce {

absl::StatusOr<std::unique_ptr<PipelinedExecutor>> CreateGpuInstance(
    DevicePlugin& plugin, int ordinal,
    const std::shared_ptr<const Model>& model,
    const GpuInstanceOptions& options) {
  auto device = plugin.OpenDevice(ordinal);
  if (!device.ok()) return device.status();
  auto kernels = plugin.CreateKernels(*device, options.kernels);
  if (!kernels.ok()) return kernels.status();
  auto program = CreateGraphProgram(
      *device, *std::move(kernels),
      {model->signature(), MakeNeutralPlanner(model), ModelNodes(*model)},
      options.program);
  if (!program.ok()) return program.status();
  return CreatePipelinedExecutor(*device, *std::move(program),
                                 options.pipeline);
}

}  // namespace coalesce
