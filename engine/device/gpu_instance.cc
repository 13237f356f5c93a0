#include "engine/device/gpu_instance.h"

#include <utility>

#include "engine/device/graph_program.h"
#include "engine/device/token_packing_inputs.h"
#include "engine/neutral_planner.h"

namespace coalesce {
GraphProgramSource DeviceProgramSourceFor(
    const std::shared_ptr<const Model>& model, bool token_packing) {
  const std::shared_ptr<const Model>& run =
      token_packing && model->packed() != nullptr ? model->packed() : model;
  GraphProgramSource source{run->signature(), MakeNeutralPlanner(run),
                            ModelNodes(*run), nullptr};
  if (run != model) {
    const int mask = model->packing().mask_input;
    source.derived = std::make_shared<TokenPackingInputs>(
        mask, model->signature().inputs[mask].dtype,
        model->packing().pads_with_zero_rows);
  }
  return source;
}

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
  GraphProgramSource source =
      DeviceProgramSourceFor(model, options.token_packing);
  PipelinedExecutorOptions pipeline = options.pipeline;
  pipeline.device_ordinal = ordinal;  // shared device memory on this GPU
  pipeline.derived = source.derived;
  auto program =
      CreateGraphProgram(share->device, *std::move(kernels), std::move(source),
                         options.program, share->constants);
  // A packed form the device cannot run (a node it has no kernel for):
  // the model as it is, padded.
  if (!program.ok() && absl::IsUnimplemented(program.status()) &&
      pipeline.derived != nullptr) {
    kernels = plugin.CreateKernels(share->device, options.kernels);
    if (!kernels.ok()) return kernels.status();
    pipeline.derived = nullptr;
    program = CreateGraphProgram(share->device, *std::move(kernels),
                                 DeviceProgramSourceFor(model, false),
                                 options.program, share->constants);
  }
  if (!program.ok()) return program.status();
  return CreatePipelinedExecutor(share->device, *std::move(program), pipeline);
}

}  // namespace coalesce
