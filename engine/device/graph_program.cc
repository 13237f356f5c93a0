#include "engine/device/graph_program.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "engine/arena_planner.h"
#include "engine/device/batch_rows.h"
#include "engine/device/device_constants.h"
#include "engine/device/device_ops.h"
#include "engine/device/device_storage.h"
#include "engine/device/plan_lowering.h"
#include "engine/device/status_context.h"

namespace coalesce {
namespace {

// Padded inputs and outputs start at multiples of this in the arena.
constexpr size_t kIoAlignment = 256;

size_t AlignUp(size_t bytes) {
  return (bytes + kIoAlignment - 1) / kIoAlignment * kIoAlignment;
}

// One plan bound to the device.
struct BoundPlan {
  std::shared_ptr<const NeutralPlan> plan;
  // What one node's steps reach besides values: its derived constants on
  // the device, and its scratch buffers in the arena (offsets fixed by the
  // plan, addresses filled per batch).
  struct NodeMemory {
    std::vector<const float*> derived;
    std::vector<const void*> converted;
    std::vector<size_t> scratch_bytes;
    std::vector<size_t> scratch_offsets;
    std::vector<void*> scratch;
  };
  struct Step {
    int node = 0;  // index in plan->nodes, for errors
    DeviceStep run;
    std::shared_ptr<NodeMemory> memory;
  };
  std::vector<Step> steps;
  // By node index; null for nodes that run nothing.
  std::vector<std::shared_ptr<NodeMemory>> node_memory;
  std::vector<std::pair<int, int>> views;  // (value, its source), node order
  // By node index: runs no step and owns no output (folded, or inside a
  // fused attention before its last node; plan_lowering.h).
  std::vector<bool> skipped;
  // By node index: the values its steps write (LoweredNode::writes; the
  // node's outputs when that is empty).
  std::vector<std::vector<int>> writes;
  std::vector<size_t> arena_offsets;  // by value id (intermediates)
  size_t arena_bytes = 0;
  // For running padded batches (BatchRowsIndependent): the model inputs'
  // then outputs' buffers, in the arena after the intermediates.
  bool rows_independent = false;
  std::vector<size_t> io_offsets;
  size_t arena_bytes_with_io = 0;
  std::vector<void*> constants;  // by value id: device address
  // How each value is stored (device_storage.h), by value id.
  std::vector<DeviceFloat> storage;
  // LoweredNode::derived on the device.
  std::vector<std::unique_ptr<DeviceBuffer>> derived;
  std::vector<Shape> output_shapes;
  // Model outputs not written in place: (output index, value id).
  std::vector<std::pair<int, int>> output_copies;
  // Filled for each batch; Enqueue calls are serialized.
  std::vector<void*> addresses;
  // Whether its steps have run once (the first run initializes libraries
  // and times convolution algorithms).
  bool ran = false;
  // Captured graphs by the batch's input and output buffers (a null graph:
  // seen once, the warm-up; `failed`: capture did not work, run directly).
  struct Captured {
    std::unique_ptr<DeviceGraph> graph;
    bool failed = false;
  };
  std::map<std::vector<const void*>, Captured> graphs;
};

// `shapes` with dim 0 set to `rows`.
std::vector<Shape> WithRows(std::vector<Shape> shapes, int64_t rows) {
  for (Shape& shape : shapes) shape[0] = rows;
  return shapes;
}

class GraphProgram : public DeviceProgram {
 public:
  GraphProgram(std::shared_ptr<Device> device,
               std::unique_ptr<DeviceKernels> kernels,
               GraphProgramSource source, GraphProgramOptions options,
               std::shared_ptr<DeviceConstants> constants)
      : device_(std::move(device)),
        kernels_(std::move(kernels)),
        source_(std::move(source)),
        options_(options),
        constants_(std::move(constants)) {}

  absl::Status Init();

  const ModelSignature& signature() const override { return source_.signature; }

  // A batch that runs padded takes its padded plan's output shapes, rows
  // cut to its own: the plans of the graph buckets serve every batch size,
  // and no size between them binds a plan of its own.
  absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& input_shapes) const override {
    if (const int64_t padded_rows = PaddedRows(input_shapes); padded_rows > 0) {
      auto padded = PlanFor(WithRows(input_shapes, padded_rows));
      if (!padded.ok()) return padded.status();
      if ((*padded)->rows_independent)
        return WithRows((*padded)->output_shapes, input_shapes[0][0]);
    }
    auto bound = PlanFor(input_shapes);
    if (!bound.ok()) return bound.status();
    return (*bound)->output_shapes;
  }

  absl::Status Enqueue(DeviceStream& stream,
                       const std::vector<Shape>& input_shapes,
                       const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) override;

  // Follows Enqueue's path without taking it: the exact plan (OutputShapes
  // binds it), the padded one when the batch runs padded, the arena's size,
  // and the batch's graph: captured, failed, or past the graph budget. A graph
  // seen once is not ready (the next batch captures it), nor is one never
  // seen (its first run initializes libraries and tunes).
  bool ReadyFor(const std::vector<Shape>& input_shapes,
                const std::vector<const void*>& inputs,
                const std::vector<void*>& outputs,
                std::vector<Shape>* output_shapes) const override;

  // Counts DropGraphs calls.
  uint64_t ready_epoch() const override { return ready_epoch_.load(); }

  // GraphBatchSize(rows) for a program with derived inputs whose batches
  // its executor pads with zero rows, when it captures graphs.
  int64_t StagedRows(int64_t rows) const override {
    if (!zero_rows_pad_ || !options_.device_graphs || !options_.pad_batches ||
        graphs_unsupported_ || rows < 1) {
      return rows;
    }
    return GraphBatchSize(rows);
  }

  // With padded batches captured as graphs (padded here, or with zero rows
  // by the executor: StagedRows): one size per graph bucket
  // (GraphBatchSize), the last one max_batch_size itself. A model whose
  // rows mix (its large plan's, BatchRowsIndependent) is not padded: every
  // size up to max_batch_size, each its own plan. With padding turned off
  // every size has a plan of its own, too many to prepare: none.
  std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const override {
    std::vector<int64_t> sizes;
    if (!options_.device_graphs || !options_.pad_batches ||
        !(batched_model_ || zero_rows_pad_))
      return sizes;
    if (batched_model_ && !rows_independent_) {
      for (int64_t b = 1; b <= max_batch_size; ++b) sizes.push_back(b);
      return sizes;
    }
    for (int64_t b = 1; b <= max_batch_size; b = GraphBatchSize(b + 1)) {
      sizes.push_back(b);
      if (GraphBatchSize(b + 1) > max_batch_size && b < max_batch_size) {
        sizes.push_back(max_batch_size);
        break;
      }
    }
    return sizes;
  }

 private:
  absl::StatusOr<std::shared_ptr<BoundPlan>> PlanFor(
      const std::vector<Shape>& input_shapes) const;
  // The plan already bound for these shapes, or null; binds nothing.
  std::shared_ptr<BoundPlan> BoundPlanOf(
      const std::vector<Shape>& input_shapes) const;
  // The padded batch size this batch runs as (PaddedPlanFor), or 0.
  int64_t PaddedRows(const std::vector<Shape>& input_shapes) const;
  bool ArenaHolds(size_t bytes) const {
    return arena_ != nullptr && arena_->size() >= bytes;
  }
  // Whether the graph of `key` runs without a warm-up or capture.
  bool GraphReady(const BoundPlan& plan,
                  const std::vector<const void*>& key) const;
  // Lowers every node that runs. With `errors`, a node the device cannot
  // run is listed there and binding goes on; without, it fails binding.
  // A failed binding leaves no constant of its own on the device.
  absl::StatusOr<std::shared_ptr<BoundPlan>> Bind(
      std::shared_ptr<const NeutralPlan> plan,
      std::vector<std::string>* errors) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<BoundPlan>> BindSteps(
      std::shared_ptr<const NeutralPlan> plan,
      std::vector<std::string>* errors) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, constants_->mu());
  void PlanArena(BoundPlan& bound, const std::vector<int>& reads_end) const;
  // Uploads the node's derived constants into `memory`.
  absl::Status UploadDerived(const LoweredNode& lowered, BoundPlan& bound,
                             BoundPlan::NodeMemory& memory) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, constants_->mu());
  // `value` (a model constant) on the device, shared by every plan and
  // every program of the store. `owner` holds its host data.
  absl::StatusOr<void*> UploadConstant(
      const PlannedValue& value,
      const std::shared_ptr<const NeutralPlan>& owner) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, constants_->mu());
  absl::Status EnsureArena(DeviceStream& stream, size_t bytes);
  // The plan of GraphBatchSize(batch) rows when this batch runs padded;
  // null when it runs as it is.
  absl::StatusOr<std::shared_ptr<BoundPlan>> PaddedPlanFor(
      const std::vector<Shape>& input_shapes);
  // Whether batches run in the arena's input and output buffers, their
  // graphs shared by every slot: padded ones (PaddedPlanFor), and every one
  // of a program with derived inputs when it captures graphs.
  bool DerivedRunInArena() const {
    return source_.derived != nullptr && options_.device_graphs &&
           !graphs_unsupported_;
  }
  // The batch through the plan's buffers in the arena and its graph: its
  // inputs copied in, its outputs copied out; `rows` rows of a padded plan
  // (dim 0 its padded rows), or every byte when `rows` < 0.
  absl::Status RunInArena(BoundPlan& plan, DeviceStream& stream, int64_t rows,
                          const std::vector<const void*>& inputs,
                          const std::vector<void*>& outputs);
  // The arena's input then output buffers of `plan`, for RunAsGraph's key.
  void ArenaKey(const BoundPlan& plan, std::vector<const void*>* key) const;
  void FillAddresses(BoundPlan& bound, const std::vector<const void*>& inputs,
                     const std::vector<void*>& outputs) const;
  // The batch's steps and output copies, enqueued one by one.
  absl::Status RunSteps(BoundPlan& plan, DeviceStream& stream,
                        const std::vector<void*>& outputs);
  // The batch as a graph: replayed, captured now, or (warm-up, no capture)
  // step by step.
  absl::Status RunAsGraph(BoundPlan& plan, DeviceStream& stream,
                          const std::vector<const void*>& inputs,
                          const std::vector<void*>& outputs);
  void DropGraphs();

  const std::shared_ptr<Device> device_;
  const std::unique_ptr<DeviceKernels> kernels_;
  const GraphProgramSource source_;
  const GraphProgramOptions options_;
  // The model's constants on this device, shared with the model's other
  // programs there; bindings hold its lock (after mu_).
  const std::shared_ptr<DeviceConstants> constants_;

  mutable absl::Mutex mu_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<BoundPlan>> plans_
      ABSL_GUARDED_BY(mu_);

  // Used by Enqueue only (serialized by the caller).
  std::unique_ptr<DeviceBuffer> arena_;
  std::unique_ptr<DeviceEvent> arena_idle_;
  int graphs_ = 0;                      // captured and alive
  std::vector<const void*> graph_key_;  // RunAsGraph's lookup key
  std::atomic<uint64_t> ready_epoch_{0};
  // The device has no capture. Atomic: OutputShapes reads it (PaddedRows).
  std::atomic<bool> graphs_unsupported_{false};
  // Reused per padded batch, so that it allocates nothing.
  std::vector<Shape> padded_shapes_;
  std::vector<const void*> padded_inputs_;
  std::vector<void*> padded_outputs_;
  bool batched_model_ = false;  // every input and output has a batch dim
  // Its large plan computes each batch row on its own (batch_rows.h).
  bool rows_independent_ = false;
  // Derived inputs that PadsWithZeroRows, and every other input and every
  // output has a batch dim: the executor pads with zero rows (StagedRows).
  bool zero_rows_pad_ = false;
  int graph_budget_ = 0;  // max_graphs, times the derived shape sets
};

// Whether every model input but the last `derived` and every output has
// -1 (the batch) as dim 0.
bool HasBatchDim(const ModelSignature& signature, size_t derived = 0) {
  if (signature.inputs.size() <= derived) return false;
  auto batched = [](const TensorSpec& spec) {
    return !spec.dims.empty() && spec.dims[0] == -1;
  };
  return std::all_of(signature.inputs.begin(), signature.inputs.end() - derived,
                     batched) &&
         std::all_of(signature.outputs.begin(), signature.outputs.end(),
                     batched);
}

// The signature's input shapes with a -1 dim 0 as `batch` and every other
// -1 dim as `dim`; derived inputs at the largest shapes they take for the
// others'.
std::vector<Shape> ShapesWithSymbolicDims(const GraphProgramSource& source,
                                          int64_t batch, int64_t dim) {
  const auto& inputs = source.signature.inputs;
  const size_t own =
      inputs.size() - (source.derived ? source.derived->count() : 0);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < own; ++i) {
    Shape shape = inputs[i].dims;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) shape[d] = d == 0 ? batch : dim;
    shapes.push_back(std::move(shape));
  }
  if (source.derived != nullptr) {
    const std::vector<Shape> derived =
        source.derived->PossibleShapes(shapes, batch)[0];
    shapes.insert(shapes.end(), derived.begin(), derived.end());
  }
  return shapes;
}

// The smallest shapes the signature allows: every -1 dim as 1.
std::vector<Shape> SmallestShapes(const GraphProgramSource& source) {
  return ShapesWithSymbolicDims(source, 1, 1);
}

// The planner folds values of up to 64 KB, so a node folded at the smallest
// shapes may run at larger ones (BERT's token types: an Expand to [batch,
// sequence]). A plan at large shapes tells which: the batch (a -1 dim 0) as
// 1024 and the other -1 dims as the largest of 1024 ... 64 that plans (a
// model may bound them: positions by 512, say); 64 for every -1 dim last.
absl::StatusOr<std::shared_ptr<const NeutralPlan>> LargePlan(
    const GraphProgramSource& source) {
  absl::Status last = absl::OkStatus();
  for (auto [batch, dim] : {std::pair<int64_t, int64_t>{1024, 1024},
                            {1024, 512},
                            {1024, 256},
                            {1024, 128},
                            {1024, 64},
                            {64, 64}}) {
    auto plan = source.planner(ShapesWithSymbolicDims(source, batch, dim));
    if (plan.ok()) return plan;
    last = plan.status();
  }
  return last;
}

// Whether node `n` never runs: the smallest plan folds it, and so does the
// large one when it plans.
bool FoldedAtEveryShape(
    size_t n, const NeutralPlan& smallest,
    const absl::StatusOr<std::shared_ptr<const NeutralPlan>>& large) {
  return smallest.nodes[n].folded && (!large.ok() || (*large)->nodes[n].folded);
}

absl::Status GraphProgram::Init() {
  absl::MutexLock lock(&mu_);
  auto idle = device_->CreateEvent();
  if (!idle.ok()) return idle.status();
  arena_idle_ = *std::move(idle);
  batched_model_ = HasBatchDim(source_.signature) && source_.derived == nullptr;
  zero_rows_pad_ = source_.derived != nullptr &&
                   source_.derived->PadsWithZeroRows() &&
                   HasBatchDim(source_.signature, source_.derived->count());
  graph_budget_ =
      options_.max_graphs *
      (source_.derived != nullptr ? source_.derived->max_shape_sets() : 1);

  // Operators and attributes first; then, with the smallest shapes, what
  // only shapes tell (dtypes, layouts). Nodes that both the smallest plan
  // and a large one compute while planning never run, so they need no
  // kernel.
  auto smallest = source_.planner(SmallestShapes(source_));
  auto large = LargePlan(source_);
  rows_independent_ = large.ok() && BatchRowsIndependent(**large);
  std::vector<std::string> errors;
  for (const auto* specs :
       {&source_.signature.inputs, &source_.signature.outputs}) {
    for (const TensorSpec& spec : *specs) {
      if (spec.dtype == DataType::kBytes)
        errors.push_back(absl::StrCat("'", spec.name,
                                      "': BYTES tensors run on the CPU only"));
    }
  }
  for (size_t n = 0; n < source_.nodes.size(); ++n) {
    if (smallest.ok() && FoldedAtEveryShape(n, **smallest, large)) continue;
    const PlanNode& node = source_.nodes[n];
    absl::Status s =
        CheckDeviceNode(node, smallest.ok() ? (*smallest)->opset : 0);
    if (!s.ok())
      errors.push_back(absl::StrCat(NodeLabel(node), ": ", s.message()));
  }
  if (errors.empty() && smallest.ok()) {
    auto bound = Bind(*smallest, &errors);
    if (!bound.ok()) return bound.status();
    if (errors.empty()) plans_[SmallestShapes(source_)] = *bound;
  }
  if (!errors.empty()) {
    return absl::UnimplementedError(absl::StrCat("the ", device_->name(),
                                                 " device cannot run ",
                                                 absl::StrJoin(errors, "; ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<BoundPlan>> GraphProgram::PlanFor(
    const std::vector<Shape>& input_shapes) const {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(input_shapes);
  if (it != plans_.end()) return it->second;
  auto plan = source_.planner(input_shapes);
  if (!plan.ok()) return plan.status();
  auto bound = Bind(*std::move(plan), nullptr);
  if (!bound.ok()) return bound.status();
  plans_[input_shapes] = *bound;
  return *bound;
}

absl::StatusOr<std::shared_ptr<BoundPlan>> GraphProgram::Bind(
    std::shared_ptr<const NeutralPlan> plan,
    std::vector<std::string>* errors) const {
  absl::MutexLock constants_lock(&constants_->mu());
  constants_->Begin();
  auto bound = BindSteps(std::move(plan), errors);
  if (!bound.ok() || (errors != nullptr && !errors->empty())) {
    constants_->Rollback();  // its plan, which owns their host data, goes
  } else {
    constants_->Commit();
  }
  return bound;
}

absl::StatusOr<std::shared_ptr<BoundPlan>> GraphProgram::BindSteps(
    std::shared_ptr<const NeutralPlan> plan,
    std::vector<std::string>* errors) const {
  auto bound = std::make_shared<BoundPlan>();
  bound->plan = plan;  // owns the host data of the constants uploaded below
  const std::vector<PlannedValue>& values = plan->values;
  bound->constants.assign(values.size(), nullptr);
  bound->node_memory.resize(plan->nodes.size());
  const PlanLowering lowering(*plan, options_.fuse_attention);
  bound->storage =
      PlanDeviceStorage(*plan, options_.activations, lowering.attention());
  bound->skipped.assign(plan->nodes.size(), false);
  bound->writes.resize(plan->nodes.size());
  // By value id: the last node reading it (through views too).
  std::vector<int> last_read(values.size(), -1);
  std::vector<int> root(values.size());
  for (size_t id = 0; id < root.size(); ++id) root[id] = static_cast<int>(id);
  for (size_t n = 0; n < plan->nodes.size(); ++n) {
    const PlanNode& node = plan->nodes[n];
    bound->skipped[n] = lowering.Skips(static_cast<int>(n));
    if (bound->skipped[n]) continue;
    bound->writes[n] = node.outputs;
    const bool allow_view =
        values[node.outputs[0]].storage == ValueStorage::kIntermediate;
    auto lowered = lowering.Lower(
        static_cast<int>(n), allow_view,
        {.activations = options_.activations, .storage = &bound->storage});
    if (!lowered.ok()) {
      if (errors == nullptr ||
          lowered.status().code() != absl::StatusCode::kUnimplemented) {
        return WithContext(lowered.status(), NodeLabel(node));
      }
      errors->push_back(
          absl::StrCat(NodeLabel(node), ": ", lowered.status().message()));
      continue;
    }
    for (int id : lowered->reads) {
      last_read[root[id]] = static_cast<int>(n);
      if (values[id].storage != ValueStorage::kConstant ||
          bound->constants[id] != nullptr)
        continue;
      auto address = UploadConstant(values[id], plan);
      if (!address.ok()) return WithContext(address.status(), NodeLabel(node));
      bound->constants[id] = *address;
    }
    if (!lowered->writes.empty()) bound->writes[n] = lowered->writes;
    if (lowered->view_of >= 0) {
      root[node.outputs[0]] = root[lowered->view_of];
      bound->views.emplace_back(node.outputs[0], lowered->view_of);
    }
    auto memory = std::make_shared<BoundPlan::NodeMemory>();
    if (absl::Status s = UploadDerived(*lowered, *bound, *memory); !s.ok())
      return WithContext(s, NodeLabel(node));
    memory->scratch_bytes = lowered->scratch_bytes;
    bound->node_memory[n] = memory;
    for (DeviceStep& step : lowered->steps) {
      bound->steps.push_back({static_cast<int>(n), std::move(step), memory});
    }
  }
  for (size_t i = 0; i < plan->outputs.size(); ++i) {
    const int id = plan->outputs[i];
    last_read[root[id]] = std::numeric_limits<int>::max();
    bound->output_shapes.push_back(values[id].info.shape);
    const PlannedValue& v = values[id];
    if (v.storage == ValueStorage::kConstant &&
        bound->constants[id] == nullptr && v.byte_size > 0) {
      auto address = UploadConstant(v, plan);
      if (!address.ok()) return address.status();
      bound->constants[id] = *address;
    }
    if (!(v.storage == ValueStorage::kOutput &&
          v.io_index == static_cast<int>(i))) {
      bound->output_copies.emplace_back(static_cast<int>(i), id);
    }
  }
  PlanArena(*bound, last_read);
  bound->addresses.assign(values.size(), nullptr);
  bound->rows_independent = BatchRowsIndependent(*bound->plan);
  size_t io_end = AlignUp(bound->arena_bytes);
  for (const auto* ids : {&bound->plan->inputs, &bound->plan->outputs}) {
    for (int id : *ids) {
      bound->io_offsets.push_back(io_end);
      io_end = AlignUp(io_end + values[id].byte_size);
    }
  }
  bound->arena_bytes_with_io = io_end;
  return bound;
}

absl::Status GraphProgram::UploadDerived(const LoweredNode& lowered,
                                         BoundPlan& bound,
                                         BoundPlan::NodeMemory& memory) const {
  for (const std::vector<float>& values : lowered.derived) {
    auto buffer =
        constants_->Upload(reinterpret_cast<const char*>(values.data()),
                           std::max<size_t>(values.size() * sizeof(float), 1));
    if (!buffer.ok()) return buffer.status();
    memory.derived.push_back(static_cast<const float*>((*buffer)->data()));
    bound.derived.push_back(*std::move(buffer));
  }
  for (const LoweredNode::ConvertedConstant& constant : lowered.converted) {
    auto address = constants_->Converted(constant, bound.plan);
    if (!address.ok()) return address.status();
    memory.converted.push_back(*address);
  }
  return absl::OkStatus();
}

// Intermediate values get blocks from the node that writes them (its
// outputs, or LoweredNode::writes) to their last reader (views extend
// their source's life), a node's scratch buffers for the
// node; a block is freed only after the node's outputs and scratch are
// placed, so no step writes over its inputs.
void GraphProgram::PlanArena(BoundPlan& bound,
                             const std::vector<int>& last_read) const {
  const NeutralPlan& plan = *bound.plan;
  std::vector<bool> is_view(plan.values.size(), false);
  for (const auto& [value, source] : bound.views) is_view[value] = true;
  auto owns_block = [&](int id) {
    return id >= 0 && !is_view[id] &&
           plan.values[id].storage == ValueStorage::kIntermediate;
  };
  ArenaPlanner planner;
  bound.arena_offsets.assign(plan.values.size(), 0);
  std::vector<bool> live(plan.values.size(), false);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    if (bound.skipped[n]) continue;
    for (int id : bound.writes[n]) {
      if (!owns_block(id)) continue;
      bound.arena_offsets[id] =
          planner.Allocate(StoredBytes(plan, bound.storage, id));
      live[id] = true;
    }
    BoundPlan::NodeMemory* memory = bound.node_memory[n].get();
    if (memory != nullptr) {
      for (size_t bytes : memory->scratch_bytes)
        memory->scratch_offsets.push_back(planner.Allocate(bytes));
      for (size_t i = 0; i < memory->scratch_bytes.size(); ++i)
        planner.Free(memory->scratch_offsets[i], memory->scratch_bytes[i]);
      memory->scratch.assign(memory->scratch_bytes.size(), nullptr);
    }
    for (size_t id = 0; id < live.size(); ++id) {
      if (live[id] && last_read[id] <= static_cast<int>(n)) {
        planner.Free(bound.arena_offsets[id],
                     StoredBytes(plan, bound.storage, static_cast<int>(id)));
        live[id] = false;
      }
    }
  }
  bound.arena_bytes = planner.peak_bytes();
}

absl::StatusOr<void*> GraphProgram::UploadConstant(
    const PlannedValue& value,
    const std::shared_ptr<const NeutralPlan>& owner) const {
  if (value.byte_size == 0) return nullptr;
  return constants_->Constant(value.info.constant_data, value.byte_size, owner);
}

absl::Status GraphProgram::EnsureArena(DeviceStream& stream, size_t bytes) {
  if (arena_ != nullptr && arena_->size() >= bytes) return absl::OkStatus();
  if (arena_ != nullptr) {
    // Batches already enqueued may still use the old arena.
    absl::Status s = device_->RecordEvent(*arena_idle_, stream);
    if (s.ok()) s = device_->SynchronizeEvent(*arena_idle_);
    if (!s.ok()) return s;
    arena_.reset();
    DropGraphs();
  }
  auto arena =
      device_->AllocateDevice(std::bit_ceil(std::max<size_t>(bytes, 256)));
  if (!arena.ok()) return WithContext(arena.status(), "device arena");
  arena_ = *std::move(arena);
  return absl::OkStatus();
}

void GraphProgram::FillAddresses(BoundPlan& bound,
                                 const std::vector<const void*>& inputs,
                                 const std::vector<void*>& outputs) const {
  const std::vector<PlannedValue>& values = bound.plan->values;
  char* arena =
      arena_ != nullptr ? static_cast<char*>(arena_->data()) : nullptr;
  for (size_t id = 0; id < values.size(); ++id) {
    const PlannedValue& v = values[id];
    void*& address = bound.addresses[id];
    switch (v.storage) {
      case ValueStorage::kInput:
        address = const_cast<void*>(inputs[v.io_index]);
        break;
      case ValueStorage::kOutput:
        address = outputs[v.io_index];
        break;
      case ValueStorage::kIntermediate:
        address = arena + bound.arena_offsets[id];
        break;
      case ValueStorage::kConstant:
        address = bound.constants[id];
        break;
      case ValueStorage::kNone:
        address = nullptr;
        break;
    }
  }
  for (const auto& [value, source] : bound.views) {
    bound.addresses[value] = bound.addresses[source];
  }
  for (const auto& memory : bound.node_memory) {
    if (memory == nullptr) continue;
    for (size_t i = 0; i < memory->scratch.size(); ++i)
      memory->scratch[i] = arena + memory->scratch_offsets[i];
  }
}

absl::Status GraphProgram::Enqueue(DeviceStream& stream,
                                   const std::vector<Shape>& input_shapes,
                                   const std::vector<const void*>& inputs,
                                   const std::vector<void*>& outputs) {
  auto padded = PaddedPlanFor(input_shapes);
  if (!padded.ok()) return padded.status();
  if (*padded != nullptr) {
    return RunInArena(**padded, stream, input_shapes[0][0], inputs, outputs);
  }
  auto bound = PlanFor(input_shapes);
  if (!bound.ok()) return bound.status();
  BoundPlan& plan = **bound;
  if (DerivedRunInArena()) return RunInArena(plan, stream, -1, inputs, outputs);
  if (absl::Status s = EnsureArena(stream, plan.arena_bytes); !s.ok()) return s;
  FillAddresses(plan, inputs, outputs);
  if (!options_.device_graphs || graphs_unsupported_) {
    return RunSteps(plan, stream, outputs);
  }
  return RunAsGraph(plan, stream, inputs, outputs);
}

int64_t GraphProgram::PaddedRows(const std::vector<Shape>& input_shapes) const {
  if (!options_.device_graphs || !options_.pad_batches || graphs_unsupported_ ||
      !batched_model_ || input_shapes.empty()) {
    return 0;
  }
  const int64_t rows = input_shapes[0].empty() ? 0 : input_shapes[0][0];
  for (const Shape& shape : input_shapes) {
    if (shape.empty() || shape[0] != rows) return 0;
  }
  const int64_t padded_rows = GraphBatchSize(rows);
  return padded_rows < 2 ? 0 : padded_rows;  // rows are told apart from 2
}

std::shared_ptr<BoundPlan> GraphProgram::BoundPlanOf(
    const std::vector<Shape>& input_shapes) const {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(input_shapes);
  return it == plans_.end() ? nullptr : it->second;
}

bool GraphProgram::GraphReady(const BoundPlan& plan,
                              const std::vector<const void*>& key) const {
  if (!options_.device_graphs || graphs_unsupported_) return plan.ran;
  auto it = plan.graphs.find(key);
  if (it == plan.graphs.end()) return plan.ran && graphs_ >= graph_budget_;
  return it->second.graph != nullptr || it->second.failed ||
         graphs_ >= graph_budget_;
}

bool GraphProgram::ReadyFor(const std::vector<Shape>& input_shapes,
                            const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs,
                            std::vector<Shape>* output_shapes) const {
  std::vector<const void*> key;
  if (const int64_t padded_rows = PaddedRows(input_shapes); padded_rows > 0) {
    std::shared_ptr<BoundPlan> plan =
        BoundPlanOf(WithRows(input_shapes, padded_rows));
    if (plan == nullptr) return false;
    if (plan->rows_independent) {
      *output_shapes = WithRows(plan->output_shapes, input_shapes[0][0]);
      if (!ArenaHolds(plan->arena_bytes_with_io)) return false;
      ArenaKey(*plan, &key);
      return GraphReady(*plan, key);
    }
  }
  std::shared_ptr<BoundPlan> exact = BoundPlanOf(input_shapes);
  if (exact == nullptr) return false;
  *output_shapes = exact->output_shapes;
  if (DerivedRunInArena()) {
    if (!ArenaHolds(exact->arena_bytes_with_io)) return false;
    ArenaKey(*exact, &key);
    return GraphReady(*exact, key);
  }
  if (!ArenaHolds(exact->arena_bytes)) return false;
  key.assign(inputs.begin(), inputs.end());
  key.insert(key.end(), outputs.begin(), outputs.end());
  return GraphReady(*exact, key);
}

absl::StatusOr<std::shared_ptr<BoundPlan>> GraphProgram::PaddedPlanFor(
    const std::vector<Shape>& input_shapes) {
  const int64_t padded_rows = PaddedRows(input_shapes);
  if (padded_rows == 0) return nullptr;
  padded_shapes_.resize(input_shapes.size());
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    padded_shapes_[i] = input_shapes[i];
    padded_shapes_[i][0] = padded_rows;
  }
  auto bound = PlanFor(padded_shapes_);
  if (!bound.ok()) return bound.status();
  if (!(*bound)->rows_independent) return nullptr;
  return bound;
}

void GraphProgram::ArenaKey(const BoundPlan& plan,
                            std::vector<const void*>* key) const {
  const char* arena = static_cast<const char*>(arena_->data());
  for (size_t offset : plan.io_offsets) key->push_back(arena + offset);
}

absl::Status GraphProgram::RunInArena(BoundPlan& plan, DeviceStream& stream,
                                      int64_t rows,
                                      const std::vector<const void*>& inputs,
                                      const std::vector<void*>& outputs) {
  absl::Status s = EnsureArena(stream, plan.arena_bytes_with_io);
  if (!s.ok()) return s;
  const NeutralPlan& neutral = *plan.plan;
  // Bytes of the batch's rows of value `id`, whose dim 0 is the padded rows.
  auto row_bytes = [&](int id) {
    const size_t bytes = neutral.values[id].byte_size;
    if (rows < 0) return bytes;
    return bytes / neutral.values[neutral.inputs[0]].info.shape[0] * rows;
  };
  char* arena = static_cast<char*>(arena_->data());
  const size_t num_inputs = neutral.inputs.size();
  padded_inputs_.resize(num_inputs);
  padded_outputs_.resize(neutral.outputs.size());
  for (size_t i = 0; i < num_inputs; ++i) {
    padded_inputs_[i] = arena + plan.io_offsets[i];
    const size_t bytes = row_bytes(neutral.inputs[i]);
    if (bytes == 0) continue;
    s = device_->CopyOnDevice(stream, arena + plan.io_offsets[i], inputs[i],
                              bytes);
    if (!s.ok()) return WithContext(s, "copying the batch's inputs in");
  }
  for (size_t o = 0; o < padded_outputs_.size(); ++o) {
    padded_outputs_[o] = arena + plan.io_offsets[num_inputs + o];
  }
  FillAddresses(plan, padded_inputs_, padded_outputs_);
  s = RunAsGraph(plan, stream, padded_inputs_, padded_outputs_);
  if (!s.ok()) return s;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const size_t bytes = row_bytes(neutral.outputs[o]);
    if (bytes == 0) continue;
    s = device_->CopyOnDevice(stream, outputs[o], padded_outputs_[o], bytes);
    if (!s.ok()) return WithContext(s, "copying the batch's rows out");
  }
  return absl::OkStatus();
}

absl::Status GraphProgram::RunSteps(BoundPlan& plan, DeviceStream& stream,
                                    const std::vector<void*>& outputs) {
  for (const BoundPlan::Step& step : plan.steps) {
    const StepContext context{*device_,
                              *kernels_,
                              stream,
                              plan.addresses.data(),
                              step.memory->derived.data(),
                              step.memory->converted.data(),
                              step.memory->scratch.data()};
    absl::Status s = step.run(context);
    if (!s.ok()) {
      return WithContext(s, NodeLabel(plan.plan->nodes[step.node]));
    }
  }
  for (const auto& [index, id] : plan.output_copies) {
    const size_t bytes = plan.plan->values[id].byte_size;
    if (bytes == 0) continue;
    absl::Status s = device_->CopyOnDevice(stream, outputs[index],
                                           plan.addresses[id], bytes);
    if (!s.ok()) return WithContext(s, "copying a model output");
  }
  plan.ran = true;
  return absl::OkStatus();
}

absl::Status GraphProgram::RunAsGraph(BoundPlan& plan, DeviceStream& stream,
                                      const std::vector<const void*>& inputs,
                                      const std::vector<void*>& outputs) {
  // A member reused per batch: looking a graph up allocates nothing.
  std::vector<const void*>& key = graph_key_;
  key.assign(inputs.begin(), inputs.end());
  key.insert(key.end(), outputs.begin(), outputs.end());
  auto it = plan.graphs.find(key);
  if (it == plan.graphs.end()) {  // the warm-up
    if (graphs_ < graph_budget_)
      plan.graphs.emplace(key, BoundPlan::Captured{});
    return RunSteps(plan, stream, outputs);
  }
  BoundPlan::Captured& captured = it->second;
  if (captured.failed ||
      (captured.graph == nullptr && graphs_ >= graph_budget_)) {
    return RunSteps(plan, stream, outputs);
  }
  if (captured.graph == nullptr) {
    absl::Status begin = device_->BeginCapture(stream);
    if (begin.code() == absl::StatusCode::kUnimplemented) {
      graphs_unsupported_ = true;
      return RunSteps(plan, stream, outputs);
    }
    if (!begin.ok()) return begin;
    absl::Status run = RunSteps(plan, stream, outputs);
    auto graph = device_->EndCapture(stream);
    if (!run.ok()) {
      captured.failed = true;
      return run;  // nothing ran: the batch fails as it would have
    }
    if (!graph.ok()) {
      if (device_->IsSticky(graph.status())) return graph.status();
      captured.failed = true;  // this batch, and later ones, step by step
      return RunSteps(plan, stream, outputs);
    }
    captured.graph = *std::move(graph);
    ++graphs_;
  }
  return WithContext(device_->LaunchGraph(*captured.graph, stream),
                     "launching the batch's graph");
}

void GraphProgram::DropGraphs() {
  ++ready_epoch_;
  absl::MutexLock lock(&mu_);
  for (auto& [shapes, plan] : plans_) plan->graphs.clear();
  graphs_ = 0;
}

}  // namespace

int64_t GraphBatchSize(int64_t batch) {
  int64_t power = 1;
  while (power < batch) {
    if (power >= 2 && power / 2 * 3 >= batch) return power / 2 * 3;
    power *= 2;
  }
  return power;
}

absl::StatusOr<std::unique_ptr<DeviceProgram>> CreateGraphProgram(
    std::shared_ptr<Device> device, std::unique_ptr<DeviceKernels> kernels,
    GraphProgramSource source, GraphProgramOptions options,
    std::shared_ptr<DeviceConstants> constants) {
  if (device == nullptr || kernels == nullptr || !source.planner) {
    return absl::InvalidArgumentError("CreateGraphProgram: missing argument");
  }
  if (constants == nullptr) {
    constants = std::make_shared<DeviceConstants>(device);
  } else if (constants->device() != device) {
    return absl::InvalidArgumentError(
        "CreateGraphProgram: the constants are another device's");
  }
  auto program = std::make_unique<GraphProgram>(
      std::move(device), std::move(kernels), std::move(source), options,
      std::move(constants));
  if (absl::Status s = program->Init(); !s.ok()) return s;
  return std::unique_ptr<DeviceProgram>(std::move(program));
}

}  // namespace coalesce
