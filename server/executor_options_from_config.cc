#include "server/executor_options_from_config.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

constexpr char kFlushDenormals[] = "flush_denormals";
constexpr char kCpuFusedAttention[] = "cpu_fused_attention";
constexpr char kDoubleBuffering[] = "double_buffering";
constexpr char kGpuPrecision[] = "gpu_precision";
constexpr char kCudaGraphs[] = "cuda_graphs";
constexpr char kCudaGraphPadding[] = "cuda_graph_padding";
constexpr char kGpuFusedAttention[] = "gpu_fused_attention";
constexpr char kGpuLayout[] = "gpu_layout";
constexpr char kTokenPacking[] = "token_packing";

// A string parameter, or `fallback` when the config has none.
std::string StringParameter(const inference::ModelConfig& config,
                            const char* key, const std::string& fallback) {
  auto it = config.parameters().find(key);
  return it == config.parameters().end() ? fallback : it->second.string_value();
}

absl::Status ReadBool(const inference::ModelConfig& config, const char* key,
                      bool* value) {
  auto it = config.parameters().find(key);
  if (it == config.parameters().end()) return absl::OkStatus();
  const std::string& text = it->second.string_value();
  if (text == "true" || text == "false") {
    *value = text == "true";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model '", config.name(), "': parameter '", key,
                   "' must be \"true\" or \"false\", got \"", text, "\""));
}

}  // namespace

int InstanceCount(const inference::ModelConfig& config) {
  int count = 0;
  for (const auto& group : config.instance_group()) count += group.count();
  return std::max(count, 1);
}

absl::StatusOr<CpuExecutorOptions> CpuExecutorOptionsFromConfig(
    const inference::ModelConfig& config, int cores) {
  CpuExecutorOptions options;
  options.intra_op_threads = std::max(1, cores / InstanceCount(config));
  if (absl::Status s =
          ReadBool(config, kFlushDenormals, &options.flush_denormals);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadBool(config, kCpuFusedAttention, &options.fuse_attention);
      !s.ok()) {
    return s;
  }
  return options;
}

absl::StatusOr<bool> TokenPackingFromConfig(
    const inference::ModelConfig& config) {
  bool packing = false;
  if (absl::Status s = ReadBool(config, kTokenPacking, &packing); !s.ok()) {
    return s;
  }
  return packing;
}

absl::StatusOr<GpuInstanceOptions> GpuInstanceOptionsFromConfig(
    const inference::ModelConfig& config) {
  bool double_buffering = true;
  if (absl::Status s = ReadBool(config, kDoubleBuffering, &double_buffering);
      !s.ok()) {
    return s;
  }
  GpuInstanceOptions options;
  options.pipeline.num_slots = double_buffering ? 2 : 1;
  if (absl::Status s =
          ReadBool(config, kCudaGraphs, &options.program.device_graphs);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadBool(config, kCudaGraphPadding, &options.program.pad_batches);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadBool(config, kGpuFusedAttention, &options.program.fuse_attention);
      !s.ok()) {
    return s;
  }
  auto it = config.parameters().find(kGpuPrecision);
  if (it == config.parameters().end()) return options;
  const std::string& precision = it->second.string_value();
  if (precision == "tf32") {
    options.kernels.precision = DevicePrecision::kTf32;
  } else if (precision == "fp16") {
    options.program.activations = DeviceFloat::kHalf;
  } else if (precision == "bf16") {
    options.program.activations = DeviceFloat::kBFloat16;
  } else if (precision != "fp32") {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", config.name(),
                     "': parameter 'gpu_precision' must be "
                     "\"fp32\", \"tf32\", \"fp16\" or \"bf16\", got \"",
                     precision, "\""));
  }
  return options;
}

absl::StatusOr<bool> GpuChannelsLastFromConfig(
    const inference::ModelConfig& config) {
  const std::string precision = StringParameter(config, kGpuPrecision, "fp32");
  const bool fp16 = precision == "fp16" || precision == "bf16";
  const std::string layout =
      StringParameter(config, kGpuLayout, fp16 ? "nhwc" : "nchw");
  if (layout != "nhwc" && layout != "nchw") {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", config.name(),
                     "': parameter 'gpu_layout' must be \"nhwc\" or "
                     "\"nchw\", got \"",
                     layout, "\""));
  }
  return layout == "nhwc";
}

}  // namespace coalesce
