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
  }
  attention_threads_ =
      std::max(1, threads > 0 ? threads : kernels::IntraOpThreads());
}

std::vector<int> ExecutionPlan::NodeReads(size_t n) const {
  const int k = node_attention_[n];
  if (k == kInsideAttention) return {};
  if (k < 0) return model_->graph().nodes[n].inputs;
  const AttentionSite& site = attention_[k];
  return {site.q.value, site.k.value, site.v.value, site.mask.value};
}

std::vector<int> ExecutionPlan::NodeWrites(size_t n) const {
  const int k = node_attention_[n];
  if (k == kInsideAttention) return {};
  if (k < 0) return model_->graph().nodes[n].outputs;
  return {attention_[k].out.value};
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
    s = kernels::Attention(CpuAttentionViews(attention_[k], data),
                           reinterpret_cast<float*>(scratch),
                           attention_threads_);
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

size_t ExecutionPlan::ScratchBytes(size_t n) const {
  const int k = node_attention_[n];
  if (k >= 0) {
    return kernels::AttentionScratchBytes(
        attention_[k].q_len, attention_[k].kv_len, attention_threads_);
  }
  return prepared_[n] != nullptr ? prepared_[n]->scratch_bytes() : 0;
}

}  // namespace coalesce
