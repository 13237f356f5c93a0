#include "engine/execution_plan.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/arena_planner.h"
#include "engine/cpu_attention.h"
#include "engine/neutral_planner.h"
#include "engine/packing_indices.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/threading.h"

namespace coalesce {

ExecutionPlan::ExecutionPlan(std::shared_ptr<const Model> model,
                             std::shared_ptr<const NeutralPlan> neutral)
    : model_(std::move(model)),
      neutral_(std::move(neutral)),
      input_values_(neutral_->inputs),
      output_values_(neutral_->outputs) {}

absl::StatusOr<std::shared_ptr<const ExecutionPlan>> ExecutionPlan::Build(
    std::shared_ptr<const Model> model, const std::vector<Shape>& input_shapes,
    const PlanOptions& options) {
  auto neutral = BuildNeutralPlan(model, input_shapes);
  if (!neutral.ok()) return neutral.status();
  std::shared_ptr<ExecutionPlan> plan(
      new ExecutionPlan(std::move(model), *std::move(neutral)));
  plan->node_attention_.assign(plan->model_->graph().nodes.size(), -1);
  if (options.fuse_attention) plan->FuseAttention(options.intra_op_threads);
  if (absl::Status s = plan->PrepareNodes(); !s.ok()) return s;
  plan->PlanArena();
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

void ExecutionPlan::FuseAttention(int threads) {
  attention_ = CpuAttentionSites(*neutral_);
  for (size_t k = 0; k < attention_.size(); ++k) {
    for (int n : attention_[k].nodes) node_attention_[n] = kInsideAttention;
    node_attention_[attention_[k].nodes.back()] = static_cast<int>(k);
    for (int n : attention_[k].row_views) node_attention_[n] = kRowView;
    packed_rows_.push_back(PackedRowsOf(*neutral_, attention_[k]));
    for (int n : packed_rows_.back().nodes)
      node_attention_[n] = kInsideAttention;
  }
  attention_threads_ =
      std::max(1, threads > 0 ? threads : kernels::IntraOpThreads());
}

int ExecutionPlan::packed_row_attentions() const {
  return static_cast<int>(
      std::count_if(packed_rows_.begin(), packed_rows_.end(),
                    [](const PackedRowsSite& p) { return p.pack_index >= 0; }));
}

std::vector<int> ExecutionPlan::NodeReads(size_t n) const {
  const int k = node_attention_[n];
  if (k == kInsideAttention) return {};
  if (k < 0) return model_->graph().nodes[n].inputs;
  const AttentionSite& site = attention_[k];
  const PackedRowsSite& packed = packed_rows_[k];
  if (packed.pack_index >= 0)
    return {packed.rows_in, packed.pack_index, site.mask.value};
  return {site.q.value, site.k.value, site.v.value, site.mask.value};
}

std::vector<int> ExecutionPlan::NodeWrites(size_t n) const {
  const int k = node_attention_[n];
  if (k == kInsideAttention) return {};
  if (k < 0) return model_->graph().nodes[n].outputs;
  const PackedRowsSite& packed = packed_rows_[k];
  return {packed.pack_index >= 0 ? packed.rows_out : attention_[k].out.value};
}

absl::Status ExecutionPlan::PrepareNodes() {
  const Graph& graph = model_->graph();
  const std::vector<PlannedValue>& values = neutral_->values;
  prepared_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (neutral_->nodes[n].folded || node_attention_[n] != -1) continue;
    const GraphNode& node = graph.nodes[n];
    absl::InlinedVector<TensorInfo, 4> inputs;
    for (int id : node.inputs)
      inputs.push_back(id < 0 ? TensorInfo{} : values[id].info);
    absl::InlinedVector<TensorInfo, 2> outputs;
    for (int id : node.outputs)
      outputs.push_back(id < 0 ? TensorInfo{} : values[id].info);
    absl::StatusOr<std::unique_ptr<PreparedKernel>> prepared =
        node.kernel->Prepare(inputs, outputs);
    if (!prepared.ok()) {
      return absl::Status(
          prepared.status().code(),
          absl::StrCat("node '", node.name, "' (op '", node.op_type,
                       "') while preparing: ", prepared.status().message()));
    }
    prepared_[n] = *std::move(prepared);
  }
  return absl::OkStatus();
}

// The arena starts with the table of tensor addresses Execute fills. Then
// intermediate tensors get blocks from their producer to their last
// consumer; a block is released only after the consuming node's outputs are
// placed, so no kernel's output overlaps its inputs, except where a prepared
// kernel writes in place (PreparedKernel::in_place_input), or a row view or
// a reshaping kernel (OpKernel::CopiesInputBytes) keeps its input's bytes:
// its output then takes over the input's block. A
// prepared kernel's scratch block lives during its node only.
void ExecutionPlan::PlanArena() {
  const std::vector<GraphNode>& nodes = model_->graph().nodes;
  const std::vector<PlannedValue>& values = neutral_->values;
  arena_offsets_.assign(values.size(), 0);
  ArenaPlanner planner;
  planner.Allocate(values.size() * sizeof(char*));  // at offset 0, never freed
  // Handle blocks of STRING inputs and outputs, never freed.
  string_input_offsets_.assign(input_values_.size(), 0);
  for (size_t i = 0; i < input_values_.size(); ++i) {
    const PlannedValue& v = values[input_values_[i]];
    if (v.info.dtype == DataType::kBytes)
      string_input_offsets_[i] = planner.Allocate(v.byte_size);
  }
  string_output_offsets_.assign(output_values_.size(), 0);
  for (size_t i = 0; i < output_values_.size(); ++i) {
    const PlannedValue& v = values[output_values_[i]];
    if (v.info.dtype == DataType::kBytes)
      string_output_offsets_[i] = planner.Allocate(v.byte_size);
  }
  scratch_offsets_.assign(nodes.size(), 0);
  std::vector<int> last_use(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (neutral_->nodes[n].folded) continue;
    for (int id : NodeReads(n))
      if (id >= 0) last_use[id] = static_cast<int>(n);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (neutral_->nodes[n].folded) continue;
    const std::vector<int> reads = NodeReads(n), writes = NodeWrites(n);
    const int shared = InPlaceInput(static_cast<int>(n), last_use);
    for (int id : writes) {
      if (id < 0 || values[id].storage != ValueStorage::kIntermediate) continue;
      if (shared >= 0 && id == writes[0]) {
        arena_offsets_[id] = arena_offsets_[shared];
        last_use[shared] = std::numeric_limits<int>::max();  // now the output's
      } else {
        arena_offsets_[id] = planner.Allocate(values[id].byte_size);
      }
    }
    const size_t scratch = ScratchBytes(n);
    if (scratch > 0) {
      scratch_offsets_[n] = planner.Allocate(scratch);
      planner.Free(scratch_offsets_[n], scratch);
    }
    auto release = [&](int id) {
      if (id >= 0 && values[id].storage == ValueStorage::kIntermediate &&
          last_use[id] <= static_cast<int>(n)) {
        planner.Free(arena_offsets_[id], values[id].byte_size);
        last_use[id] = std::numeric_limits<int>::max();  // freed
      }
    };
    for (int id : reads) release(id);
    for (int id : writes) release(id);
  }
  arena_bytes_ = planner.peak_bytes();
}

int ExecutionPlan::InPlaceInput(int n, const std::vector<int>& last_use) const {
  const GraphNode& node = model_->graph().nodes[n];
  // A row view, or a kernel whose output is its input's bytes: output 0
  // may be input 0's block.
  const bool same_bytes =
      node_attention_[n] == kRowView ||
      (node_attention_[n] == -1 && prepared_[n] == nullptr &&
       node.kernel->CopiesInputBytes());
  if ((prepared_[n] == nullptr && !same_bytes) || node.outputs.empty() ||
      node.outputs[0] < 0)
    return -1;
  const int slot = same_bytes ? 0 : prepared_[n]->in_place_input();
  if (slot < 0 || slot >= static_cast<int>(node.inputs.size())) return -1;
  const int in = node.inputs[slot];
  const std::vector<PlannedValue>& values = neutral_->values;
  const PlannedValue& out = values[node.outputs[0]];
  if (in < 0 || values[in].storage != ValueStorage::kIntermediate ||
      out.storage != ValueStorage::kIntermediate || last_use[in] != n ||
      values[in].byte_size != out.byte_size)
    return -1;
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i)
    if (i != slot && node.inputs[i] == in) return -1;  // read twice
  return in;
}

absl::Status ExecutionPlan::Execute(absl::Span<const char* const> inputs,
                                    absl::Span<char* const> outputs,
                                    char* arena,
                                    const ExecuteContext& context) const {
  const std::vector<PlannedValue>& values = neutral_->values;
  // The address table lives in the arena, so Execute allocates nothing.
  char** data = reinterpret_cast<char**>(arena);
  for (size_t id = 0; id < values.size(); ++id) {
    const PlannedValue& v = values[id];
    switch (v.storage) {
      case ValueStorage::kInput:
        data[id] = const_cast<char*>(inputs[v.io_index]);
        break;
      case ValueStorage::kConstant:
        data[id] = const_cast<char*>(v.info.constant_data);
        break;
      case ValueStorage::kNone:
        data[id] = nullptr;
        break;
      case ValueStorage::kIntermediate:
        data[id] = arena + arena_offsets_[id];
        break;
      case ValueStorage::kOutput:
        data[id] = outputs[v.io_index];
        break;
    }
  }
  const std::vector<GraphNode>& nodes = model_->graph().nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (neutral_->nodes[n].folded || node_attention_[n] == kInsideAttention)
      continue;
    if (absl::Status s = RunNode(n, data, arena, context); !s.ok()) return s;
  }
  // Outputs that are inputs, constants or repeated are copied.
  for (size_t i = 0; i < output_values_.size(); ++i) {
    const PlannedValue& v = values[output_values_[i]];
    if (v.storage == ValueStorage::kOutput && v.io_index == static_cast<int>(i))
      continue;
    if (v.byte_size > 0)
      std::memcpy(outputs[i], data[output_values_[i]], v.byte_size);
  }
  return absl::OkStatus();
}

// Node n's kernel, or the fused attention it ends, timed into the profile.
absl::Status ExecutionPlan::RunNode(size_t n, char** data, char* arena,
                                    const ExecuteContext& context) const {
  const std::vector<PlannedValue>& values = neutral_->values;
  const GraphNode& node = model_->graph().nodes[n];
  // Inline room for every common operator, so no run allocates.
  absl::InlinedVector<ConstTensorView, 8> in;
  absl::InlinedVector<TensorView, 4> out;
  const int k = node_attention_[n];
  if (k < 0) {
    for (int id : node.inputs) {
      in.push_back(id < 0 ? ConstTensorView{}
                          : ConstTensorView{values[id].info.dtype,
                                            &values[id].info.shape, data[id]});
    }
    for (int id : node.outputs) {
      out.push_back(id < 0 ? TensorView{}
                           : TensorView{values[id].info.dtype,
                                        &values[id].info.shape, data[id],
                                        context.strings});
    }
  }
  NodeProfile* const profile = context.profile;
  const auto start = profile != nullptr
                         ? std::chrono::steady_clock::now()
                         : std::chrono::steady_clock::time_point{};
  char* const scratch = arena + scratch_offsets_[n];
  absl::Status s = absl::OkStatus();
  if (k >= 0) {
    s = RunAttention(k, data, scratch);
  } else if (k == kRowView) {
    RunRowView(node, data);
  } else {
    s = prepared_[n] != nullptr ? prepared_[n]->Run(in, out, scratch)
                                : node.kernel->Run(in, out);
  }
  if (profile != nullptr) {
    if (k >= 0) profile->MarkFusedAttention(n);
    profile->Add(n, std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("node '", node.name, "' (op '", node.op_type,
                               "'): ", s.message()));
  }
  return absl::OkStatus();
}

// A row view's output is its input's bytes: the same block where the arena
// could give it (InPlaceInput), else a copy.
void ExecutionPlan::RunRowView(const GraphNode& node, char** data) const {
  const int in = node.inputs[0];
  kernels::CopyBytes(data[in], neutral_->values[in].byte_size,
                     data[node.outputs[0]]);
}

// Packed rows: the sequences' first rows and the rows' positions (int64)
// from the pack index, before the kernel's scratch; rows past the real ones
// (the bucket's fillers, never unpacked) get zeros.
absl::Status ExecutionPlan::RunAttention(int k, char** data,
                                         char* scratch) const {
  kernels::AttentionViews views = CpuAttentionViews(attention_[k], data);
  const PackedRowsSite& packed = packed_rows_[k];
  if (packed.pack_index >= 0) {
    const AttentionSite& site = attention_[k];
    const int64_t rows = packed.rows;
    const auto* pack =
        reinterpret_cast<const int64_t*>(data[packed.pack_index]);
    auto* offsets = reinterpret_cast<int64_t*>(scratch);
    int64_t* positions = offsets + site.batch + 1;
    const int64_t real =
        PackedRealRows(pack, rows, site.batch, site.q_len, offsets, positions);
    views.q =
        reinterpret_cast<const float*>(data[packed.rows_in]) + site.q.offset;
    views.k =
        reinterpret_cast<const float*>(data[packed.rows_in]) + site.k.offset;
    views.v =
        reinterpret_cast<const float*>(data[packed.rows_in]) + site.v.offset;
    views.out =
        reinterpret_cast<float*>(data[packed.rows_out]) + site.out.offset;
    views.offsets = offsets;
    views.positions = positions;
    const int64_t width = neutral_->values[packed.rows_out].info.shape[1];
    std::fill(reinterpret_cast<float*>(data[packed.rows_out]) + real * width,
              reinterpret_cast<float*>(data[packed.rows_out]) + rows * width,
              0.0f);
    scratch += PackedIndexBytes(k);
  }
  return kernels::Attention(views, reinterpret_cast<float*>(scratch),
                            attention_threads_);
}

size_t ExecutionPlan::PackedIndexBytes(int k) const {
  const PackedRowsSite& packed = packed_rows_[k];
  if (packed.pack_index < 0) return 0;
  const size_t bytes =
      (attention_[k].batch + 1 + packed.rows) * sizeof(int64_t);
  return (bytes + 63) / 64 * 64;
}

size_t ExecutionPlan::ScratchBytes(size_t n) const {
  const int k = node_attention_[n];
  if (k >= 0) {
    return PackedIndexBytes(k) +
           kernels::AttentionScratchBytes(
               attention_[k].q_len, attention_[k].kv_len, attention_threads_);
  }
  return prepared_[n] != nullptr ? prepared_[n]->scratch_bytes() : 0;
}

}  // namespace coalesce
