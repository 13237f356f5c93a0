// Completing a model's config from its ONNX signature, and checking that the
// two agree: what Triton calls auto-complete, for ONNX models.
#ifndef COALESCE_SERVER_MODEL_CONFIG_COMPLETION_H_
#define COALESCE_SERVER_MODEL_CONFIG_COMPLETION_H_

#include "absl/status/status.h"
#include "engine/tensor_spec.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// The batch size given to a model whose config says nothing about batching
// and whose inputs and outputs all start with a symbolic dimension (Triton's
// default for auto-completed models).
inline constexpr int kAutoMaxBatchSize = 4;

// Fills in what *config leaves out from `signature`:
// - with no inputs, no outputs and max_batch_size 0 in the config, a model
//   whose every input and output has a symbolic first dimension batches:
//   max_batch_size = kAutoMaxBatchSize and dynamic_batching {} (unless a
//   scheduling choice is already set);
// - missing inputs and outputs, missing data types and dims (without the batch
//   dimension when max_batch_size > 0);
// - one KIND_CPU instance group when none is given (the server applies
//   Triton's defaults before this: instance_placement.h); platform
//   onnxruntime_onnx.
// Then checks: every config tensor exists in the model with the same data
// type and compatible dims; batching models have a variable first dimension;
// preferred batch sizes and priority levels are in range; no KIND_MODEL
// instances (KIND_GPU and KIND_AUTO are resolved by executor_factory.h);
// features Coalesce does not implement (ensembles, ragged batching, shape
// tensors, decoupled models) are refused rather than ignored. With
// sequence_batching, the control and state tensors are not clients' and stay
// out of the input and output lists (sequence_config.h). InvalidArgument
// naming the tensor or field.
absl::Status CompleteModelConfig(const ModelSignature& signature,
                                 inference::ModelConfig* config);

// InvalidArgument naming the tensor when one batch item of a config input or
// output (its dims; a -1 counts as 1) cannot exist here: the element count
// overflows, or it needs more than `memory_limit` bytes (a BYTES element
// counts its 4-byte length). Such a model could never serve a request.
absl::Status CheckTensorSizes(const inference::ModelConfig& config,
                              int64_t memory_limit);

// InvalidArgument "backend 'python' is not supported by this server: ..."
// (or the platform) for anything but ONNX models (backend onnxruntime,
// platform onnxruntime_onnx, or neither given). Checked before the model
// file is looked for, so that a Python or TensorRT model is refused by name.
absl::Status CheckBackendSupported(const inference::ModelConfig& config);

}  // namespace coalesce

#endif  // COALESCE_SERVER_MODEL_CONFIG_COMPLETION_H_
