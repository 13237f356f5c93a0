// Turning a ModelConfig into the options of its executor instances.
//
// Threads: the cores the process may use (resource_limits.h: affinity and
// the cgroup quota) are shared evenly by the model's instances
// (instance_group counts), at least one intra-op thread each.
//
// Config parameters read here (string values, as in Triton's `parameters`):
//   flush_denormals  "true" (default) or "false": whether the instances
//                    compute denormal floats as zero (kernels/cpu/denormals.h).
//   double_buffering "true" (default) or "false": GPU instances get two
//                    slots, so a batch copies in while the last computes
//                    (engine/device/pipelined_executor.h), or one.
//   gpu_precision    "fp32" (default: exact float32), "tf32": GPU GEMMs
//                    and convolutions may use TF32 tensor cores (about 3
//                    decimal digits per input, float32 accumulation), or
//                    "fp16": activations stay float16 between the
//                    operators that handle it (convolutions, pooling,
//                    elementwise, Concat, Transpose, views; float32
//                    accumulation and statistics), weights are converted
//                    once at load, and the wire, Softmax, LayerNorm and
//                    the rest stay float32 (engine/device/device_storage.h),
//                    or "bf16": the same with bfloat16 (float32's range,
//                    7 mantissa bits).
//   gpu_layout       "nhwc" or "nchw": the layout of 2-D convolutions,
//                    pooling and BatchNormalization on the GPU (NHWC: the
//                    load-time layout pass, engine/model.h ForDevice).
//                    Default: "nhwc" with gpu_precision "fp16" or "bf16",
//                    else "nchw".
//   cuda_graphs      "true" (default) or "false": GPU instances capture a
//                    batch's kernels as a CUDA graph per shape set and
//                    buffers after one warm-up batch, and replay it
//                    (engine/device/graph_program.h).
//   cuda_graph_padding "true" (default) or "false": with graphs, a batch
//                    runs padded to the next graph batch size (1, 2, 3, 4,
//                    6, 8, 12, ...) when the model's rows are independent,
//                    so one graph serves every size up to it.
//   token_packing    "true" or "false" (default): build the model's
//                    token-packed form (engine/token_packing.h), which its
//                    instances run (CPU: batches with padding; GPU: every
//                    batch): a transformer's dense layers then compute the
//                    real tokens only, and positions the padding mask pads
//                    come out as zeros (docs/engine.md, Token packing).
// Other parameter keys are left to other readers and ignored here.
#ifndef COALESCE_SERVER_EXECUTOR_OPTIONS_FROM_CONFIG_H_
#define COALESCE_SERVER_EXECUTOR_OPTIONS_FROM_CONFIG_H_

#include "absl/status/statusor.h"
#include "engine/cpu_executor.h"
#include "engine/device/gpu_instance.h"
#include "engine/device/pipelined_executor.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// Total instances of the model over its instance groups (at least 1).
int InstanceCount(const inference::ModelConfig& config);

// InvalidArgument, naming the parameter, for a value that is not "true" or
// "false". REQUIRES: cores >= 1.
absl::StatusOr<CpuExecutorOptions> CpuExecutorOptionsFromConfig(
    const inference::ModelConfig& config, int cores);

// The token_packing parameter (default false). InvalidArgument, naming
// it, for a value that is not "true" or "false".
absl::StatusOr<bool> TokenPackingFromConfig(
    const inference::ModelConfig& config);

// The same for GPU instances. InvalidArgument naming the parameter for a
// bad value.
absl::StatusOr<GpuInstanceOptions> GpuInstanceOptionsFromConfig(
    const inference::ModelConfig& config);

// Whether GPU instances run the model channels-last (gpu_layout, with its
// default from gpu_precision). InvalidArgument naming the parameter for a
// bad value.
absl::StatusOr<bool> GpuChannelsLastFromConfig(
    const inference::ModelConfig& config);

}  // namespace coalesce

#endif  // COALESCE_SERVER_EXECUTOR_OPTIONS_FROM_CONFIG_H_
