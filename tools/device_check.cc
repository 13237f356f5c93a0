// coalesce-device-check: finds the GPU through the CUDA plugin and drives
// the pipelined executor (engine/device/) on it with IdentityProgram
// batches, first with one slot and then with two. It checks every output
// byte and reports the throughput of each, so the gain from double buffering
// is measured on the real device. --simulated runs the same on the
// simulated device. docs/tools.md describes it.
//
// Exit status: 0 all outputs right; 1 a failure; 2 no usable device.
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"
#include "engine/device/identity_program.h"
#include "engine/device/pipelined_executor.h"
#include "engine/device/plugin_loader.h"
#include "engine/device/simulated_device.h"

namespace coalesce {
namespace {

struct Flags {
  std::string plugin = DefaultCudaPluginPath();
  bool simulated = false;
  int batches = 64;
  int64_t batch_mb = 16;
};

// The flags (base/command_line.h), writing into `flags`.
std::unique_ptr<CLI::App> CommandLine(Flags& flags) {
  auto app = MakeCommandLine(
      "Usage: coalesce-device-check [flags]\n\n"
      "Drives the pipelined executor on GPU 0 (through the CUDA plugin) or on\n"
      "the simulated device with identity batches, one slot then two, checks\n"
      "every output byte and reports each throughput. Exit 0: all right;\n"
      "1: a failure; 2: no usable device.");
  app->add_option("--plugin", flags.plugin, "The device plugin.")
      ->type_name("PATH");
  app->add_flag("--simulated", flags.simulated,
                "Use the simulated device instead of the plugin's GPU.");
  app->add_option("--batches", flags.batches, "Batches per run.")
      ->check(CLI::Range(1, INT_MAX).description(""))
      ->type_name("N");
  app->add_option("--batch-mb", flags.batch_mb, "Size of one batch.")
      ->check(CLI::Range(1, INT_MAX).description(""))
      ->type_name("MB");
  return app;
}

float Pattern(int batch, int64_t i) {
  return static_cast<float>((batch * 7919 + i) % 65536);
}

// Fails when slot `s` does not hold batch `batch`'s values.
absl::Status Verify(const BatchSlot& slot, int batch, int64_t floats) {
  const auto* y = reinterpret_cast<const float*>(slot.output_data(0));
  for (int64_t i = 0; i < floats; ++i) {
    if (y[i] != Pattern(batch, i)) {
      return absl::DataLossError(absl::StrCat("batch ", batch, ": output[", i,
                                              "] is ", y[i], ", expected ",
                                              Pattern(batch, i)));
    }
  }
  return absl::OkStatus();
}

// Runs `batches` batches of `floats` FP32 values through an executor with
// `slots` slots, refilling a slot once its copy-out is done (as the batcher
// does). Returns the wall time in seconds.
absl::StatusOr<double> RunPipeline(std::shared_ptr<Device> device, int slots,
                                   int batches, int64_t floats) {
  constexpr int64_t kRow = 1024;
  ModelSignature sig;
  sig.inputs = {{"x", DataType::kFp32, {-1, kRow}}};
  sig.outputs = {{"y", DataType::kFp32, {-1, kRow}}};
  auto executor = CreatePipelinedExecutor(
      device, std::make_unique<IdentityProgram>(device.get(), sig),
      PipelinedExecutorOptions{slots});
  if (!executor.ok()) return executor.status();
  std::vector<std::shared_ptr<Event>> done(slots);
  std::vector<int> batch_of(slots, -1);
  auto finish = [&](int s) -> absl::Status {
    if (done[s] == nullptr) return absl::OkStatus();
    if (absl::Status st = done[s]->Wait(); !st.ok()) return st;
    return Verify(*(*executor)->slot(s), batch_of[s], floats);
  };
  const auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < batches; ++b) {
    const int s = b % slots;
    if (absl::Status st = finish(s); !st.ok()) return st;
    BatchSlot* slot = (*executor)->slot(s);
    if (absl::Status st = slot->SetInputShapes({{floats / kRow, kRow}});
        !st.ok())
      return st;
    auto* x = reinterpret_cast<float*>(slot->input_data(0));
    for (int64_t i = 0; i < floats; ++i) x[i] = Pattern(b, i);
    (*executor)->CopyIn(slot);
    (*executor)->Run(slot);
    done[s] = (*executor)->CopyOut(slot);
    batch_of[s] = b;
  }
  for (int s = 0; s < slots; ++s) {
    if (absl::Status st = finish(s); !st.ok()) return st;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// The device to check, and a line describing it; exit code 2 when none.
absl::StatusOr<std::pair<std::shared_ptr<Device>, std::string>> OpenDevice(
    const Flags& flags) {
  if (flags.simulated) {
    SimulatedDevice::Options options;
    options.copy_bytes_per_second = 8e9;  // a modelled PCIe link
    options.device_memory_bytes = options.pinned_memory_bytes = size_t{8} << 30;
    return std::make_pair(std::make_shared<SimulatedDevice>(options),
                          std::string("simulated (8 GB/s modelled copies)"));
  }
  auto plugin = LoadDevicePlugin(flags.plugin);
  if (!plugin.ok()) {
    // No plugin at all: no GPU support here. A plugin that does not load
    // is a broken build or bundle: a failure, not "no GPU".
    if (plugin.status().code() != absl::StatusCode::kNotFound)
      return plugin.status();
    return absl::UnavailableError(plugin.status().message());
  }
  auto devices = (*plugin)->Devices();
  if (!devices.ok())
    return devices.status();  // Unavailable: no driver or device
  const DeviceInfo& d = devices->front();
  auto device = (*plugin)->OpenDevice(d.ordinal);
  if (!device.ok()) return device.status();
  // The operator kernels GPU models need (cuBLASLt is loaded here).
  auto kernels = (*plugin)->CreateKernels(*device, DeviceKernelOptions{});
  if (!kernels.ok()) return kernels.status();
  return std::make_pair(
      *std::move(device),
      absl::StrCat("cuda:", d.ordinal, " ", d.name, ", ", d.memory_bytes >> 20,
                   " MiB, sm_", d.compute_capability, " (", devices->size(),
                   " device(s)); kernels: ", (*kernels)->description()));
}

int Main(int argc, char** argv) {
  Flags flags;
  auto app = CommandLine(flags);
  if (std::optional<int> code = ParseCommandLineOrExit(
          *app, argc, argv, "coalesce-device-check", 1)) {
    return *code;
  }
  auto opened = OpenDevice(flags);
  if (!opened.ok()) {
    const bool no_device =
        opened.status().code() == absl::StatusCode::kUnavailable;
    std::printf("%s: %s\n", no_device ? "no usable device" : "FAILED",
                std::string(opened.status().message()).c_str());
    return no_device ? 2 : 1;
  }
  std::printf("device: %s\n", opened->second.c_str());
  const int64_t floats =
      (flags.batch_mb << 20) / static_cast<int64_t>(sizeof(float));
  std::printf("%-6s %-8s %-9s %-9s %s\n", "slots", "batches", "MB/batch",
              "seconds", "GB/s in+out");
  double seconds[3] = {0, 0, 0};
  for (int slots : {1, 2}) {
    auto run = RunPipeline(opened->first, slots, flags.batches, floats);
    if (!run.ok()) {
      std::printf("FAILED with %d slot(s): %s\n", slots,
                  std::string(run.status().message()).c_str());
      return 1;
    }
    seconds[slots] = *run;
    const double gb = 2.0 * flags.batches * floats * sizeof(float) / 1e9;
    std::printf("%-6d %-8d %-9lld %-9.3f %.2f\n", slots, flags.batches,
                static_cast<long long>(flags.batch_mb), *run, gb / *run);
  }
  std::printf("double buffering: %.2fx the one-slot throughput\n",
              seconds[1] / seconds[2]);
  std::printf("all %d outputs of each run matched their inputs\n",
              flags.batches);
  return 0;
}

}  // namespace
}  // namespace coalesce

int main(int argc, char** argv) { return coalesce::Main(argc, argv); }
