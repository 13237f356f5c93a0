// The CPU ExecutorInstance (see engine/executor.h for the protocol).
//
// Each instance owns one worker thread (a CpuStream) that runs the CopyIn, Run
// and CopyOut steps of all its slots in the order they were enqueued, and
// completes their Events. Kernels called from that thread use at most
// `intra_op_threads` OpenMP threads (oneDNN included) and, by default, flush
// denormal floats to zero.
//
// Memory: a slot's input and output buffers are sized by SetInputShapes and
// only grow, so repeated batches of the same shapes reuse them (stable
// addresses). The model's nodes read the slot's input buffers in place (CopyIn
// is a no-op) and write graph outputs straight into its output buffers, which
// stay valid until the slot's next SetInputShapes. Intermediate tensors live in
// one arena per instance, sized for the largest plan seen. Plans are cached per
// instance by input-shape set; initializers are shared through the Model.
//
// BYTES (STRING) inputs and outputs: Run parses each BYTES input's serialized
// buffer into StringRef handles in the arena (pointing into the slot's input
// buffer; malformed data fails the run with InvalidArgument naming the
// input), and after the plan ran serializes each BYTES output's handles into
// the slot's output buffer, which grows as needed. Strings ops make during a
// run (Cast to STRING) live in a per-instance StringStore, cleared at the
// start of the next run. Numeric inputs and outputs stay zero-copy.
#ifndef COALESCE_ENGINE_CPU_EXECUTOR_H_
#define COALESCE_ENGINE_CPU_EXECUTOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/model.h"
#include "engine/node_profile.h"

namespace coalesce {

struct CpuExecutorOptions {
  int intra_op_threads = 1;  // threads one batch may use
  // Denormal floats computed as zero on the worker and its intra-op threads
  // (kernels/cpu/denormals.h explains the cost this removes).
  bool flush_denormals = true;
  int num_slots = 1;  // BatchSlots (in-flight batches) on this instance
  // When set, every Run adds each node's time to it (node_profile.h).
  // REQUIRES: sized for model->graph().nodes; outlives the instance and is
  // used by no other instance.
  NodeProfile* profile = nullptr;
  // When set, every batch that runs the model's packed form (Model::packed,
  // engine/token_packed_plans.h) adds each of that form's nodes' time to it;
  // `profile` then counts only the batches run padded.
  // REQUIRES: sized for model->packed()->graph().nodes; as `profile`.
  NodeProfile* packed_profile = nullptr;
  // Exported attentions run as one kernel each (PlanOptions).
  bool fuse_attention = true;
};

// InvalidArgument when model is null or an option is below 1.
absl::StatusOr<std::unique_ptr<ExecutorInstance>> CreateCpuExecutor(
    std::shared_ptr<const Model> model, const CpuExecutorOptions& options);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CPU_EXECUTOR_H_
