// CreateGpuInstance: one executor instance of an ONNX model on one GPU, the
// way the server makes every KIND_GPU instance (server/executor_factory.h): a
// device context and kernels from the device plugin, the model's
// GraphProgram on them (engine/device/graph_program.h), and a
// PipelinedExecutor over it. Also used by coalesce-onnx-run --device gpu and
// the GPU tests, so they measure and check exactly what the server runs.
// The one file of engine/device/ that sees the engine's planner
// (engine/model.h, engine/neutral_planner.h): its own library,
// coalesce_gpu_instance, and its own row in docs/layers.json.
#ifndef COALESCE_ENGINE_DEVICE_GPU_INSTANCE_H_
#define COALESCE_ENGINE_DEVICE_GPU_INSTANCE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/device/device_constants.h"
#include "engine/device/device_plugin.h"
#include "engine/device/graph_program.h"
#include "engine/device/pipelined_executor.h"
#include "engine/model.h"

namespace coalesce {

// Errors: the plugin's (no device, no cuBLASLt, out of memory), or
// Unimplemented naming every node the GPU cannot run.
struct GpuInstanceOptions {
  PipelinedExecutorOptions pipeline;
  DeviceKernelOptions kernels;
  GraphProgramOptions program;
  // Run the model's packed form (Model::packed(), engine/token_packing.h)
  // when it has one, its indices derived from each batch's padding mask
  // (token_packing_inputs.h); else the model as it is.
  bool token_packing = true;
};

// What the instances of one model version on one GPU share: the device
// object (one context) and the model's constants on it, so the weights are
// uploaded and held once per GPU. Empty until the first instance made with
// it fills it.
struct GpuModelShare {
  std::shared_ptr<Device> device;
  std::shared_ptr<DeviceConstants> constants;
};

// What a device instance of `model` runs: its packed form, with the
// packed form's derived inputs (TokenPackingInputs) in `derived`, when
// `token_packing` and the model has one (Model::packed()); else the model.
// The derived inputs pad batches with zero rows when the load-time check
// found that rows of zeros change no other row (TokenPacking::
// pads_with_zero_rows).
GraphProgramSource DeviceProgramSourceFor(
    const std::shared_ptr<const Model>& model, bool token_packing);

// `share`: null, or the GPU's share for this model (the same ordinal each
// call).
absl::StatusOr<std::unique_ptr<PipelinedExecutor>> CreateGpuInstance(
    DevicePlugin& plugin, int ordinal,
    const std::shared_ptr<const Model>& model,
    const GpuInstanceOptions& options, GpuModelShare* share = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_GPU_INSTANCE_H_
