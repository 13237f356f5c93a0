// SimulatedKernels: DeviceKernels (engine/device/device_kernels.h) on the
// SimulatedDevice, so GraphProgram runs whole models in CI without a GPU.
// Each primitive is one simulated kernel launch whose body computes on the
// host with the CUDA kernels' own per-element math (kernels/cuda/*_math.h:
// activations, broadcasting, Softmax's row reduction, transpose indexing);
// the GEMM is a plain triple loop accumulating in double. Launches declare
// the memory they read and write, so the device's race check sees them.
#ifndef COALESCE_ENGINE_DEVICE_SIMULATED_KERNELS_H_
#define COALESCE_ENGINE_DEVICE_SIMULATED_KERNELS_H_

#include <chrono>
#include <memory>

#include "engine/device/device_kernels.h"
#include "engine/device/simulated_device.h"

namespace coalesce {

// REQUIRES: `device` outlives the kernels. Every launch takes
// `launch_duration` of simulated time.
std::unique_ptr<DeviceKernels> CreateSimulatedKernels(
    SimulatedDevice* device,
    std::chrono::microseconds launch_duration = std::chrono::microseconds(0));

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_SIMULATED_KERNELS_H_
