// Model warm-up at load: what runs on every executor instance before the
// model is ready, so that the first requests, and the first batch of every
// size the batcher forms, take the steady-state path.
//
//   1. The config's model_warmup samples (Triton's fields), each `count`
//      times (at least once): one batch of batch_size rows (a model without
//      batching: one request as declared), every model input given, with
//      zero data, random data or a file of model_dir/warmup/ (one row's
//      bytes, repeated over the rows, or the whole batch's).
//   2. Whatever the config says, each batch size whose first batches
//      prepare state (ExecutorInstance::PreparedBatchSizes: a GPU
//      instance's plan and captured graph per padded bucket), twice, with
//      zero data, when every input's non-batch dims are fixed; once per
//      variant of the size (PreparedVariants, WritePreparedVariant: a
//      token-packed model's token buckets, each a padding mask with that
//      many real tokens). Largest first: it grows the device's arena to its
//      size once, and growing the arena drops every graph captured before
//      (their addresses go stale), so smaller sizes captured after it stay
//      captured.
//
// Warm-up drives each instance's slot 0 by the executor protocol and waits
// for each batch, on the calling thread (the loader), one instance after
// another. Before step 2 every slot is sized for the largest prepared
// batch (staging buffers grown once, so that graphs captured on a slot's
// buffers stay valid); after it, each other slot runs a prepared batch
// (at most twice) while it is not ReadyFor it (a batch of 1 is not padded:
// its graph is per slot). So the batcher finds every slot ready for every
// batch size when the model is READY, and forms each batch inline
// (engine/executor.h). A failing batch fails the load with the sample and
// the instance named, as Triton fails it.
#ifndef COALESCE_SERVER_MODEL_WARMUP_H_
#define COALESCE_SERVER_MODEL_WARMUP_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/shape.h"
#include "engine/tensor_spec.h"
#include "proto/model_config.pb.h"

namespace coalesce {

// One batch to run: full shapes (batch dimension included, the config's
// dims) and bytes per model input, in the model's input order (BYTES
// inputs serialized).
struct WarmupBatch {
  std::string name;  // for errors and logs
  std::vector<Shape> shapes;
  std::vector<std::string> data;
  int runs = 1;
};

// The model_warmup samples of `config` (completed), as batches.
// InvalidArgument naming the sample and the input for: a batch_size out of
// range, an input that is not the model's or is missing, a data_type or
// dims that disagree with the input's config, no data kind chosen, a data
// file that cannot be read or whose size fits neither one row nor the
// batch. `model_dir` holds the warmup/ folder.
absl::StatusOr<std::vector<WarmupBatch>> WarmupBatchesFromConfig(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const std::filesystem::path& model_dir);

// The zero-data batches of PreparedBatchSizes(max_batch_size) for one
// instance, largest first, each size's variants in the instance's order,
// each run twice; empty (with *why set) when some input has a variable
// non-batch dim, the model does not batch, or a variant cannot be written.
std::vector<WarmupBatch> PreparedSizeBatches(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const ExecutorInstance& instance, std::string* why);

struct WarmupReport {
  int batches = 0;  // batches run, over every instance
  double seconds = 0;
};

// Runs `samples` and each instance's prepared sizes on every instance, in
// order. The first failure, naming the batch and the instance.
absl::StatusOr<WarmupReport> WarmUpInstances(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const std::vector<WarmupBatch>& samples,
    const std::vector<std::unique_ptr<ExecutorInstance>>& instances);

}  // namespace coalesce

#endif  // COALESCE_SERVER_MODEL_WARMUP_H_
