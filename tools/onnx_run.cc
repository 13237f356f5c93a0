// coalesce-onnx-run: runs one ONNX model once through the engine's CPU
// executor or, with --device gpu, a GPU instance (through the CUDA plugin;
// --device simulated: the same program on the simulated device, whose
// kernels run the CUDA kernels' math on the host),
// exactly as the server does (Model::LoadFromFile, CreateCpuExecutor or
// CreateGpuInstance, SetInputShapes / CopyIn / Run / CopyOut on one slot),
// and writes every output as a serialized onnx.TensorProto. Optionally times
// repeated runs (on the GPU: host to host, copies included). See
// docs/tools.md.
//
//   coalesce-onnx-run --model M.onnx --input NAME=FILE.pb ... --output-dir DIR
//                     [--threads N] [--warmup W --repeat R]
//                     [--timing-json FILE] [--graph-optimizations on|off]
//                     [--channels-last on|off] [--residual-fusion on|off]
//                     [--device cpu|gpu|simulated] [--plugin PATH]
//                     [--gpu-precision fp32|tf32|fp16|bf16] [--gpu-layout
//                     auto|nchw|nhwc]
//                     [--device-graphs on|off] [--fused-attention on|off]
//                     [--token-packing on|off]
//
// Exit codes: 0 success, 1 the model failed to load, plan or run (the engine's
// error is printed), 2 bad usage (a message and the usage line are printed).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/command_line.h"
#include "engine/cpu_executor.h"
#include "engine/device/device_plan.h"
#include "engine/device/gpu_instance.h"
#include "engine/device/graph_program.h"
#include "engine/device/plugin_loader.h"
#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/node_profile.h"
#include "engine/tensor_file.h"
#include "nlohmann/json.hpp"
#include "tools/profile_report.h"

namespace coalesce::tools {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  std::string output_dir;
  int threads = 1;
  int warmup = 0;
  int repeat = 0;  // 0: no timed runs
  std::string timing_json;
  std::string profile_json;  // non-empty: profile the timed runs per node
  bool graph_optimizations = true;  // the engine's load-time rewrites
  bool channels_last = true;        // their CPU layout pass (--device cpu)
  bool residual_fusion = true;      // Conv + Add into one FusedConv
  std::string device = "cpu";  // cpu, gpu (GPU 0 through the plugin), simulated
  std::string plugin = DefaultCudaPluginPath();
  bool tf32 = false;  // --gpu-precision tf32
  // --gpu-precision fp16 or bf16: activations in 16 bits.
  DeviceFloat activations = DeviceFloat::kFloat;
  bool device_graphs = true;        // --device-graphs on (GPU and simulated)
  bool fused_attention = true;      // --fused-attention on (GPU and simulated)
  bool token_packing = false;       // ModelOptions::token_packing
  std::string gpu_layout = "auto";  // --gpu-layout
  bool device_plan = false;         // --device-plan
};

absl::Status UsageError(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// An "on|off" flag.
void AddOnOff(CLI::App& app, const std::string& name, bool& field,
              const std::string& help) {
  app.add_option_function<std::string>(
         name, [&field](const std::string& v) { field = v == "on"; }, help)
      ->check(CLI::IsMember({"on", "off"}).description(""))
      ->type_name("on|off")
      ->default_str(field ? "on" : "off");
}

// The flags (base/command_line.h), writing into `flags`; docs/tools.md says
// more about each.
std::unique_ptr<CLI::App> CommandLine(Flags& flags) {
  auto app = MakeCommandLine(
      "Usage: coalesce-onnx-run --model M.onnx --input NAME=FILE.pb ... "
      "--output-dir DIR [flags]\n\n"
      "Runs one ONNX model once through the engine (CPU executor, GPU 0 or\n"
      "the simulated device), writes each output as OUTPUT_DIR/<name>.pb,\n"
      "and with --repeat times repeated runs.");
  CLI::App& a = *app;
  a.add_option("--model", flags.model, "The model. Required.")
      ->type_name("M.onnx");
  AddOptionWith(
      a, "--input",
      [&flags](const std::string& v) -> absl::Status {
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
          return UsageError(
              absl::StrCat("--input needs NAME=FILE.pb, got '", v, "'"));
        }
        flags.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        return absl::OkStatus();
      },
      "One model input, a serialized TensorProto (repeatable).",
      /*repeatable=*/true)
      ->type_name("NAME=FILE.pb");
  a.add_option("--output-dir", flags.output_dir,
               "Where the outputs go. Required.")
      ->type_name("DIR");
  a.add_option("--threads", flags.threads, "Intra-op threads (CPU).")
      ->check(CLI::Range(1, INT_MAX).description(""))
      ->type_name("N");
  a.add_option("--warmup", flags.warmup, "Untimed runs before the timed ones.")
      ->check(CLI::Range(0, INT_MAX).description(""))
      ->type_name("W");
  a.add_option("--repeat", flags.repeat, "Timed runs (0: none).")
      ->check(CLI::Range(1, INT_MAX).description(""))
      ->type_name("R");
  a.add_option("--timing-json", flags.timing_json,
               "Write the timings here as JSON (needs --repeat).")
      ->type_name("FILE");
  a.add_option("--profile", flags.profile_json,
               "Profile the timed runs per node and op type into this JSON "
               "file (CPU; needs --repeat).")
      ->type_name("FILE.json");
  AddOnOff(a, "--graph-optimizations", flags.graph_optimizations,
           "The engine's load-time graph rewrites.");
  AddOnOff(a, "--channels-last", flags.channels_last,
           "The CPU layout pass (with --graph-optimizations on).");
  AddOnOff(a, "--residual-fusion", flags.residual_fusion,
           "Conv + Add fused into one FusedConv.");
  a.add_option("--device", flags.device,
               "cpu: the CPU executor; gpu: GPU 0 through the plugin; "
               "simulated: the simulated device.")
      ->check(CLI::IsMember({"cpu", "gpu", "simulated"}).description(""))
      ->type_name("cpu|gpu|simulated");
  a.add_option("--plugin", flags.plugin, "The device plugin (--device gpu).")
      ->type_name("PATH");
  a.add_option_function<std::string>(
       "--gpu-precision",
       [&flags](const std::string& v) {
         flags.tf32 = v == "tf32";
         flags.activations = v == "fp16"   ? DeviceFloat::kHalf
                             : v == "bf16" ? DeviceFloat::kBFloat16
                                           : DeviceFloat::kFloat;
       },
       "Precision of GEMMs and convolutions on the device.")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}).description(""))
      ->type_name("fp32|tf32|fp16|bf16")
      ->default_str("fp32");
  a.add_option("--gpu-layout", flags.gpu_layout,
               "Layout of convolutions on the device (gpu, simulated); "
               "auto: nhwc with fp16 or bf16, else nchw.")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}).description(""))
      ->type_name("auto|nchw|nhwc")
      ->default_str("auto");
  a.add_flag("--device-plan", flags.device_plan,
             "Print what the device runs for these inputs (gpu, simulated): "
             "per node its layout, the storage of its values and its steps.");
  AddOnOff(a, "--device-graphs", flags.device_graphs,
           "Capture and replay device graphs (gpu, simulated).");
  AddOnOff(a, "--fused-attention", flags.fused_attention,
           "Run exported attention as one fused kernel (cpu, gpu, "
           "simulated; on the cpu also off with --graph-optimizations "
           "off).");
  AddOnOff(a, "--token-packing", flags.token_packing,
           "Run a transformer's token-wise layers on the real tokens only "
           "(engine/token_packing.h). A model that does not qualify runs "
           "padded, and the reason is printed.");
  return app;
}

absl::Status CheckFlags(const Flags& flags, bool warmup_given) {
  if (flags.model.empty()) return UsageError("--model is required");
  if (flags.output_dir.empty()) return UsageError("--output-dir is required");
  if (warmup_given && flags.repeat == 0)
    return UsageError("--warmup needs --repeat");
  if (!flags.timing_json.empty() && flags.repeat == 0)
    return UsageError("--timing-json needs --repeat");
  if (!flags.profile_json.empty() && flags.repeat == 0)
    return UsageError("--profile needs --repeat");
  if (!flags.profile_json.empty() && flags.device != "cpu")
    return UsageError("--profile is for the CPU executor");
  return absl::OkStatus();
}

// InvalidArgument unless every model input is given exactly once with --input
// and every --input names a model input.
absl::Status CheckInputNames(const Model& model, const Flags& flags) {
  std::vector<std::string> expected;
  for (const TensorSpec& spec : model.signature().inputs)
    expected.push_back(spec.name);
  for (const auto& given : flags.inputs) {
    if (std::count(expected.begin(), expected.end(), given.first) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input '", given.first, "' is not a model input ",
                       "(inputs: ", absl::StrJoin(expected, ", "), ")"));
    }
  }
  for (const std::string& name : expected) {
    const auto times =
        std::count_if(flags.inputs.begin(), flags.inputs.end(),
                      [&](const auto& given) { return given.first == name; });
    if (times != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("model input '", name, "' is given ", times,
                       " times with --input (needs exactly one)"));
    }
  }
  return absl::OkStatus();
}

// The input tensors in the model's input order, each read from the file given
// for its name. InvalidArgument for a missing, unknown or repeated name, or a
// tensor whose type does not match the model.
absl::StatusOr<std::vector<HostTensor>> ReadInputs(const Model& model,
                                                   const Flags& flags) {
  if (absl::Status s = CheckInputNames(model, flags); !s.ok()) return s;
  std::vector<HostTensor> tensors;
  for (const TensorSpec& spec : model.signature().inputs) {
    const auto given =
        std::find_if(flags.inputs.begin(), flags.inputs.end(),
                     [&](const auto& in) { return in.first == spec.name; });
    absl::StatusOr<HostTensor> t = ReadTensorFile(given->second);
    if (!t.ok()) return t.status();
    if (t->dtype != spec.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", spec.name, "' from '", given->second, "' is ",
          std::string(DataTypeName(t->dtype)), ", the model takes ",
          std::string(DataTypeName(spec.dtype))));
    }
    t->name = spec.name;
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

// Declares the shapes and copies `inputs` into `slot`.
absl::Status WriteInputs(const std::vector<HostTensor>& inputs,
                         BatchSlot& slot) {
  std::vector<Shape> shapes;
  for (const HostTensor& t : inputs) shapes.push_back(t.shape);
  if (absl::Status s = slot.SetInputShapes(shapes); !s.ok()) return s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int index = static_cast<int>(i);
    if (slot.input_byte_size(index) != inputs[i].bytes.size()) {
      return absl::InternalError(
          absl::StrCat("slot input '", inputs[i].name, "' holds ",
                       slot.input_byte_size(index), " bytes, the tensor has ",
                       inputs[i].bytes.size()));
    }
    std::memcpy(slot.input_data(index), inputs[i].bytes.data(),
                inputs[i].bytes.size());
  }
  return absl::OkStatus();
}

// One batch as the server runs it: inputs into the slot, then CopyIn, Run and
// CopyOut, waiting for CopyOut (whose event carries the first failure).
absl::Status RunOnce(ExecutorInstance& executor,
                     const std::vector<HostTensor>& inputs) {
  BatchSlot* slot = executor.slot(0);
  if (absl::Status s = WriteInputs(inputs, *slot); !s.ok()) return s;
  executor.CopyIn(slot);
  executor.Run(slot);
  return executor.CopyOut(slot)->Wait();
}

// "gpu_0/softmax_1" -> "gpu_0_softmax_1": letters, digits, '.', '-' and '_'
// are kept, anything else becomes '_'.
std::string SanitizedFileName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                      c == '_';
    if (!keep) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

// Writes every output of the last run as DIR/<sanitized name>.pb (the proto's
// name field holds the output's real name) and prints one line per output.
absl::Status WriteOutputs(const Model& model, const BatchSlot& slot,
                          const fs::path& dir) {
  const std::vector<TensorSpec>& specs = model.signature().outputs;
  std::vector<std::string> used;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int index = static_cast<int>(i);
    const std::string file = SanitizedFileName(specs[i].name) + ".pb";
    if (std::count(used.begin(), used.end(), file) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("outputs '", specs[i].name,
                       "' and an earlier one both map to '", file, "'"));
    }
    used.push_back(file);
    const char* data = slot.output_data(index);
    HostTensor t{specs[i].name, specs[i].dtype, slot.output_shape(index),
                 std::string(data, slot.output_byte_size(index))};
    const std::string path = (dir / file).string();
    if (absl::Status s = WriteTensorFile(t, path); !s.ok()) return s;
    std::printf("output '%s' %s %s -> %s\n", t.name.c_str(),
                std::string(DataTypeName(t.dtype)).c_str(),
                ShapeToString(t.shape).c_str(), path.c_str());
  }
  return absl::OkStatus();
}

struct TimingSummary {
  std::vector<double> runs_ms;  // in run order
  double median_ms = 0, mean_ms = 0, p90_ms = 0, min_ms = 0, max_ms = 0;
};

// Nearest-rank percentile `p` (0 < p <= 100) of sorted, non-empty `v`.
double Percentile(const std::vector<double>& v, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

TimingSummary Summarize(std::vector<double> runs_ms) {
  TimingSummary s;
  s.runs_ms = runs_ms;
  std::sort(runs_ms.begin(), runs_ms.end());
  const size_t n = runs_ms.size();
  s.median_ms =
      n % 2 ? runs_ms[n / 2] : (runs_ms[n / 2 - 1] + runs_ms[n / 2]) / 2;
  s.mean_ms = std::accumulate(runs_ms.begin(), runs_ms.end(), 0.0) / n;
  s.p90_ms = Percentile(runs_ms, 90);
  s.min_ms = runs_ms.front();
  s.max_ms = runs_ms.back();
  return s;
}

// `warmup` untimed runs, then `repeat` runs timed one by one with steady_clock
// (each includes writing the inputs into the slot, as a server batch does).
// The profiles (null ones skipped) are reset after the warm-up.
absl::StatusOr<TimingSummary> TimeRuns(ExecutorInstance& executor,
                                       const std::vector<HostTensor>& inputs,
                                       int warmup, int repeat,
                                       std::vector<NodeProfile*> profiles) {
  for (int i = 0; i < warmup; ++i) {
    if (absl::Status s = RunOnce(executor, inputs); !s.ok()) return s;
  }
  for (NodeProfile* profile : profiles) {
    if (profile != nullptr) profile->Reset();
  }
  std::vector<double> runs_ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s = RunOnce(executor, inputs); !s.ok()) return s;
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    runs_ms.push_back(elapsed.count());
  }
  return Summarize(std::move(runs_ms));
}

absl::Status WriteTimingJson(const Flags& flags, const TimingSummary& t) {
  const nlohmann::ordered_json timing{
      {"model", flags.model},
      {"device", flags.device},
      {"threads", flags.threads},
      {"graph_optimizations", flags.graph_optimizations},
      {"warmup", flags.warmup},
      {"repeat", flags.repeat},
      {"median_ms", t.median_ms},
      {"mean_ms", t.mean_ms},
      {"p90_ms", t.p90_ms},
      {"min_ms", t.min_ms},
      {"max_ms", t.max_ms},
      {"runs_ms", t.runs_ms}};
  std::ofstream file(flags.timing_json, std::ios::trunc);
  file << timing.dump(2, ' ', false,
                      nlohmann::ordered_json::error_handler_t::replace)
       << "\n";
  if (!file.flush()) {
    return absl::InternalError(
        absl::StrCat("cannot write '", flags.timing_json, "'"));
  }
  return absl::OkStatus();
}

absl::Status ReportTiming(const Flags& flags, const TimingSummary& t) {
  std::printf(
      "timing: %d runs after %d warm-up, %d thread(s): median %.3f ms, mean "
      "%.3f ms, p90 %.3f ms, min %.3f ms\n",
      flags.repeat, flags.warmup, flags.threads, t.median_ms, t.mean_ms,
      t.p90_ms, t.min_ms);
  if (flags.timing_json.empty()) return absl::OkStatus();
  return WriteTimingJson(flags, t);
}

absl::Status ReportProfile(const Flags& flags, const Model& model,
                           const NodeProfile& profile) {
  std::printf("%s", ProfileTable(model, profile, flags.repeat).c_str());
  std::ofstream file(flags.profile_json, std::ios::trunc);
  file << ProfileJson(model, profile, flags.repeat);
  if (!file.flush()) {
    return absl::InternalError(
        absl::StrCat("cannot write '", flags.profile_json, "'"));
  }
  return absl::OkStatus();
}

// --device-plan: the device's lowering of the plan for these inputs (the
// packed form's, with its indices for these inputs, when it runs).
absl::Status PrintDevicePlan(const Flags& flags,
                             const std::shared_ptr<const Model>& model,
                             const std::vector<HostTensor>& inputs) {
  std::vector<Shape> shapes;
  std::vector<const void*> data;
  for (const HostTensor& t : inputs) {
    shapes.push_back(t.shape);
    data.push_back(t.bytes.data());
  }
  GraphProgramSource source = DeviceProgramSourceFor(model, true);
  if (source.derived != nullptr) {
    std::vector<std::vector<int64_t>> indices;
    std::vector<void*> out;
    const std::vector<Shape> largest_shapes =
        source.derived->PossibleShapes(shapes, kEveryRowReal)[0];
    for (const Shape& largest : largest_shapes) {
      indices.emplace_back(
          std::max<int64_t>(1, ElementCount(largest).value_or(1)));
      out.push_back(indices.back().data());
    }
    auto derived = source.derived->Compute(shapes, kEveryRowReal, data, out);
    if (!derived.ok()) return derived.status();
    shapes.insert(shapes.end(), derived->begin(), derived->end());
  }
  auto plan = source.planner(shapes);
  if (!plan.ok()) return plan.status();
  auto summary =
      DescribeDevicePlan(**plan, flags.activations, flags.fused_attention);
  if (!summary.ok()) return summary.status();
  std::printf("%s", DevicePlanTable(*summary).c_str());
  return absl::OkStatus();
}

// GPU 0's instance of `model`, one slot (runs are timed one at a time).
absl::StatusOr<std::unique_ptr<ExecutorInstance>> CreateGpuExecutor(
    const Flags& flags, const std::shared_ptr<const Model>& model) {
  auto plugin = LoadDevicePlugin(flags.plugin);
  if (!plugin.ok()) return plugin.status();
  auto devices = (*plugin)->Devices();
  if (!devices.ok()) return devices.status();
  const DeviceInfo& gpu = devices->front();
  std::printf("device: cuda:%d %s\n", gpu.ordinal, gpu.name.c_str());
  GpuInstanceOptions options;
  options.pipeline.num_slots = 1;
  if (flags.tf32) options.kernels.precision = DevicePrecision::kTf32;
  options.program.device_graphs = flags.device_graphs;
  options.program.activations = flags.activations;
  options.program.fuse_attention = flags.fused_attention;
  auto instance = CreateGpuInstance(**plugin, gpu.ordinal, model, options);
  if (!instance.ok()) return instance.status();
  return std::unique_ptr<ExecutorInstance>(*std::move(instance));
}

// The same program on the simulated device (8 GiB of modelled memory).
absl::StatusOr<std::unique_ptr<ExecutorInstance>> CreateSimulatedExecutor(
    const Flags& flags, const std::shared_ptr<const Model>& model) {
  SimulatedDevice::Options options;
  options.device_memory_bytes = options.pinned_memory_bytes = size_t{8} << 30;
  auto device = std::make_shared<SimulatedDevice>(options);
  GraphProgramSource source = DeviceProgramSourceFor(model, true);
  PipelinedExecutorOptions pipeline;
  pipeline.num_slots = 1;
  pipeline.derived = source.derived;
  auto program = CreateGraphProgram(
      device, CreateSimulatedKernels(device.get()), std::move(source),
      GraphProgramOptions{.device_graphs = flags.device_graphs,
                          .activations = flags.activations,
                          .fuse_attention = flags.fused_attention});
  if (!program.ok()) return program.status();
  auto executor =
      CreatePipelinedExecutor(device, *std::move(program), pipeline);
  if (!executor.ok()) return executor.status();
  return std::unique_ptr<ExecutorInstance>(*std::move(executor));
}

// What --token-packing made of the model, on stderr.
void PrintPacking(const Model& model) {
  if (model.packed() == nullptr) {
    std::fprintf(stderr, "%s; running padded\n",
                 model.packing_refusal().c_str());
    return;
  }
  const TokenPacking& p = model.packing();
  std::fprintf(stderr,
               "token packing: mask '%s', %lld nodes on real tokens, %lld "
               "values packed, %lld unpacked; zero rows %s\n",
               model.signature().inputs[p.mask_input].name.c_str(),
               static_cast<long long>(p.region_nodes),
               static_cast<long long>(p.packs),
               static_cast<long long>(p.unpacks),
               p.pads_with_zero_rows ? "pad batches" : "change other rows");
}

absl::Status Run(const Flags& flags) {
  const bool device_nhwc =
      flags.gpu_layout == "nhwc" ||
      (flags.gpu_layout == "auto" && flags.activations != DeviceFloat::kFloat);
  ModelOptions model_options = flags.device == "cpu"
                                   ? ModelOptions{}
                                   : ModelOptions::ForDevice(device_nhwc);
  if (!flags.channels_last) model_options.optimizer.channels_last = false;
  if (!flags.residual_fusion) model_options.optimizer.residual_fusion = false;
  if (!flags.graph_optimizations)
    model_options.optimizer = OptimizerOptions::None();
  model_options.token_packing = flags.token_packing;
  absl::StatusOr<std::shared_ptr<const Model>> model =
      Model::LoadFromFile(flags.model, model_options);
  if (!model.ok()) return model.status();  // it names the file
  if (flags.token_packing) PrintPacking(**model);
  absl::StatusOr<std::vector<HostTensor>> inputs = ReadInputs(**model, flags);
  if (!inputs.ok()) return inputs.status();
  if (flags.device_plan && flags.device != "cpu") {
    if (absl::Status s = PrintDevicePlan(flags, *model, *inputs); !s.ok())
      return s;
  }
  std::error_code ec;
  fs::create_directories(flags.output_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create '", flags.output_dir, "': ", ec.message()));
  }
  // With a packed form, a batch with padding runs it: its nodes are
  // profiled apart, and reported when they ran.
  const Model* const packed = (*model)->packed().get();
  std::optional<NodeProfile> profile, packed_profile;
  if (!flags.profile_json.empty()) {
    profile.emplace((*model)->graph().nodes.size());
    if (packed != nullptr) packed_profile.emplace(packed->graph().nodes.size());
  }
  NodeProfile* const profile_or_null = profile ? &*profile : nullptr;
  absl::StatusOr<std::unique_ptr<ExecutorInstance>> executor =
      flags.device == "gpu" ? CreateGpuExecutor(flags, *model)
      : flags.device == "simulated"
          ? CreateSimulatedExecutor(flags, *model)
          : CreateCpuExecutor(
                *model, CpuExecutorOptions{
                            .intra_op_threads = flags.threads,
                            .num_slots = 1,
                            .profile = profile_or_null,
                            .packed_profile =
                                packed_profile ? &*packed_profile : nullptr,
                            // As written: no fusion either.
                            .fuse_attention = flags.fused_attention &&
                                              flags.graph_optimizations});
  if (!executor.ok()) return executor.status();
  if (absl::Status s = RunOnce(**executor, *inputs); !s.ok()) return s;
  if (absl::Status s =
          WriteOutputs(**model, *(*executor)->slot(0), flags.output_dir);
      !s.ok()) {
    return s;
  }
  if (flags.repeat == 0) return absl::OkStatus();
  absl::StatusOr<TimingSummary> timing =
      TimeRuns(**executor, *inputs, flags.warmup, flags.repeat,
               {profile_or_null, packed_profile ? &*packed_profile : nullptr});
  if (!timing.ok()) return timing.status();
  if (absl::Status s = ReportTiming(flags, *timing); !s.ok()) return s;
  if (!profile) return absl::OkStatus();
  if (packed_profile && packed_profile->ran()) {
    std::printf("profile of the packed form (every timed run was packed)\n");
    return ReportProfile(flags, *packed, *packed_profile);
  }
  return ReportProfile(flags, **model, *profile);
}

int Main(int argc, char** argv) {
  Flags flags;
  auto app = CommandLine(flags);
  bool help = false;
  absl::Status parsed = ParseCommandLine(*app, argc, argv, &help);
  if (parsed.ok() && help) {
    std::fputs(CommandLineUsage(*app).c_str(), stdout);
    return 0;
  }
  if (parsed.ok()) parsed = CheckFlags(flags, app->count("--warmup") > 0);
  if (!parsed.ok()) {
    std::fprintf(stderr, "coalesce-onnx-run: %s\n\n%s",
                 std::string(parsed.message()).c_str(),
                 CommandLineUsage(*app).c_str());
    return 2;
  }
  if (absl::Status s = Run(flags); !s.ok()) {
    std::fprintf(stderr, "coalesce-onnx-run: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace coalesce::tools

int main(int argc, char** argv) { return coalesce::tools::Main(argc, argv); }
