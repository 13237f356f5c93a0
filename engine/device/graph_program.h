// GraphProgram: an ONNX model's DeviceProgram on any Device, built from the
// model's NeutralPlanner (engine/neutral_plan.h) and the device's kernels
// (device_kernels.h, lowered per node by device_ops.h).
//
// Per distinct set of input shapes it binds a plan once (first OutputShapes
// for those shapes): the node steps; an arena layout in device memory in
// which intermediate values share blocks once dead and views alias their
// source; and the model constants the steps read, uploaded once per store
// (device_constants.h: the program's own, or one shared by the model's
// programs on the device) and shared by every plan. Enqueue then
// fills each value's address for the batch and enqueues the steps on the
// compute stream; the arena is shared by batches, which that stream
// serializes.
//
// Create checks every node against the device (CheckDeviceNode), except
// those that plans at the smallest shapes (-1 dims as 1) and at large ones
// (a -1 batch as 1024, the other -1 dims as the largest of 1024 ... 64 that
// plans) both compute while planning; and binds
// the plan of the smallest shapes so that a node the device cannot run for
// real shapes is found at load too; every such node is named in one
// Unimplemented error. Shapes that only plan-time binding can judge fail
// their batch with the node named.
#ifndef COALESCE_ENGINE_DEVICE_GRAPH_PROGRAM_H_
#define COALESCE_ENGINE_DEVICE_GRAPH_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/derived_inputs.h"
#include "engine/device/device.h"
#include "engine/device/device_constants.h"
#include "engine/device/device_kernels.h"
#include "engine/device/device_program.h"
#include "engine/neutral_plan.h"
#include "engine/tensor_spec.h"

namespace coalesce {

struct GraphProgramSource {
  ModelSignature signature;
  NeutralPlanner planner;
  // Every node of the model, without shapes, for the load-time check. The
  // pointers in them stay valid while `planner` lives.
  std::vector<PlanNode> nodes;
  // The inputs at the end of `signature` that the executor derives from
  // the others (derived_inputs.h: a token-packed model's indices); null:
  // none. The load-time plans take their largest shapes for the others'.
  // The program pads no batch of such a model (the derived inputs' dim 0
  // is no batch); its executor may (StagedRows, below).
  std::shared_ptr<const DerivedInputs> derived;
};

// Device graphs (CUDA graphs): the steps of a batch are captured once per
// shape set and set of input/output buffers, on the second batch that uses
// them (the first is the warm-up: libraries initialize, workspaces and the
// arena are in place), and replayed as one launch from then on. At most
// `max_graphs` per program (times DerivedInputs::max_shape_sets with
// derived inputs: a graph per token bucket); past it, batches run step by
// step. A device
// without capture, or a capture that fails, runs step by step. Growing the
// arena drops every graph (their addresses are stale).
//
// Padding: when the model computes each batch row on its own
// (BatchRowsIndependent, batch_rows.h), a batch of b >= 2 rows runs as
// GraphBatchSize(b) rows, in that size's plan (OutputShapes binds no plan
// of b rows). Its rows are copied into padded input buffers in
// the arena, the graph of that size runs, and the first b rows of its
// padded outputs are copied out: one graph per size serves every batch
// size up to it, on every slot. The extra rows hold whatever an earlier
// batch left there; no real row reads them. Batches of 1, and models whose
// rows mix, get graphs per exact shapes and buffers.
//
// With derived inputs that PadsWithZeroRows (a token-packed model), and a
// batch dim on every other input and every output, the executor stages a
// batch of b rows as StagedRows(b) = GraphBatchSize(b) rows, the extra ones
// zeros (pipelined_executor.h), and derives its inputs for those rows. Such
// a program runs every batch in its plan's buffers in the arena (inputs
// copied in, outputs out), so that a graph per (size, derived shapes)
// serves every slot; PreparedBatchSizes are the padded ones'.
struct GraphProgramOptions {
  bool device_graphs = true;
  int max_graphs = 32;
  bool pad_batches = true;
  // How activations are stored between operators (device_storage.h):
  // kFloat (FP32 mode), or kHalf / kBFloat16 (FP16 / BF16 mode: GEMMs and
  // convolutions multiply in that 16-bit type, weights converted once per
  // program, activations by the device before each product where they are
  // not stored in it; float32 accumulation, normalization and softmax
  // statistics, model inputs and outputs).
  DeviceFloat activations = DeviceFloat::kFloat;
  // Exported attentions (attention_pattern.h) run as one fused attention
  // each; false: node by node, as the graph spells them (the A/B).
  bool fuse_attention = true;
};

// The batch sizes padded batches run as: 1, 2, 3, 4, 6, 8, 12, 16, 24, ...
// (powers of two and 1.5 times them), so padding adds less than half of a
// batch's rows; the smallest of them >= `batch` (batch >= 1).
int64_t GraphBatchSize(int64_t batch);

// Unimplemented naming every node the device cannot run; the device's error
// (ResourceExhausted when out of memory) when the constants cannot be
// uploaded.
// `constants`: the store of the model's constants on `device` that this
// program shares with the model's other programs there (device_constants.h);
// null: a store of its own. InvalidArgument when it is another device's.
absl::StatusOr<std::unique_ptr<DeviceProgram>> CreateGraphProgram(
    std::shared_ptr<Device> device, std::unique_ptr<DeviceKernels> kernels,
    GraphProgramSource source, GraphProgramOptions options = {},
    std::shared_ptr<DeviceConstants> constants = nullptr);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_GRAPH_PROGRAM_H_
