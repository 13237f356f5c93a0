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

namespace coalesce {
namespace {

// Outputs up to this size are computed while planning when their inputs are
// known; shape arithmetic is a few dozen bytes.
constexpr size_t kMaxFoldedBytes = 64 * 1024;

// No tensor may exceed this many bytes (1 TiB): a shape computed from a
// corrupt or hostile model fails planning instead of overflowing sizes.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// The byte size of a tensor, or InvalidArgument naming it when its shape has
// negative dims, overflows or exceeds kMaxTensorBytes.
absl::StatusOr<size_t> CheckedByteSize(const TensorInfo& info,
                                       const std::string& name) {
  std::optional<int64_t> count = ElementCount(info.shape);
  const int64_t elem = ElementByteSize(info.dtype);
  if (!count || (elem > 0 && *count > kMaxTensorBytes / elem)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output '", name, "' would have shape ",
                     ShapeToString(info.shape),
                     ", which is negative or larger than 1 TiB"));
  }
  return static_cast<size_t>(*count * elem);
}

std::string DescribeInputs(const Graph& graph, const GraphNode& node,
                           const std::vector<PlannedValue>& values) {
  std::vector<std::string> parts;
  for (int id : node.inputs) {
    if (id < 0) continue;
    parts.push_back(absl::StrCat("'", graph.value_names[id], "' ",
                                 ShapeToString(values[id].info.shape)));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

ExecutionPlan::ExecutionPlan(std::shared_ptr<const Model> model)
    : model_(std::move(model)) {}

absl::StatusOr<std::shared_ptr<const ExecutionPlan>> ExecutionPlan::Build(
    std::shared_ptr<const Model> model,
    const std::vector<Shape>& input_shapes) {
  std::shared_ptr<ExecutionPlan> plan(new ExecutionPlan(std::move(model)));
  if (absl::Status s = plan->BindInputs(input_shapes); !s.ok()) return s;
  if (absl::Status s = plan->InferNodes(); !s.ok()) return s;
  if (absl::Status s = plan->PrepareNodes(); !s.ok()) return s;
  plan->AssignStorage();
  plan->PlanArena();
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

absl::Status ExecutionPlan::BindInputs(const std::vector<Shape>& input_shapes) {
  const Graph& graph = model_->graph();
  const ModelSignature& sig = model_->signature();
  values_.resize(graph.value_names.size());
  for (size_t id = 0; id < values_.size(); ++id) {
    if (const ConstantTensor* c = graph.constants[id].get()) {
      values_[id].info = {c->dtype, c->shape, c->data.data()};
      values_[id].byte_size = c->byte_size;
    }
  }
  if (input_shapes.size() != sig.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", sig.inputs.size(), " input shapes, got ",
                     input_shapes.size()));
  }
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const TensorSpec& spec = sig.inputs[i];
    const Shape& shape = input_shapes[i];
    const TensorInfo info = {spec.dtype, shape, nullptr};
    absl::StatusOr<size_t> bytes = CheckedByteSize(info, spec.name);
    if (!bytes.ok() ||
        (model_->input_has_shape(i) && !ShapeMatches(spec.dims, shape))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", spec.name, "' has shape ", ShapeToString(shape),
          ", which does not fit the model's ", ShapeToString(spec.dims)));
    }
    const int id = graph.inputs[i];
    values_[id].info = info;
    values_[id].byte_size = *bytes;
    input_values_.push_back(id);
  }
  output_values_ = graph.outputs;
  return absl::OkStatus();
}

absl::Status ExecutionPlan::InferNodes() {
  const Graph& graph = model_->graph();
  folded_.assign(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    absl::InlinedVector<TensorInfo, 4> inputs;
    for (int id : node.inputs)
      inputs.push_back(id < 0 ? TensorInfo{} : values_[id].info);
    absl::InlinedVector<TensorInfo, 2> outputs(node.outputs.size());
    if (absl::Status s = node.kernel->Infer(inputs, absl::MakeSpan(outputs));
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name, "' (op '", node.op_type, "') with inputs ",
          DescribeInputs(graph, node, values_), ": ", s.message()));
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] < 0) continue;
      PlannedValue& v = values_[node.outputs[o]];
      v.info = std::move(outputs[o]);
      absl::StatusOr<size_t> bytes =
          CheckedByteSize(v.info, graph.value_names[node.outputs[o]]);
      if (!bytes.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name, "' (op '", node.op_type,
                         "'): ", bytes.status().message()));
      }
      v.byte_size = *bytes;
    }
    if (absl::Status s = MaybeFold(n); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("node '", node.name, "' (op '", node.op_type,
                                 "') while planning: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status ExecutionPlan::MaybeFold(size_t index) {
  const GraphNode& node = model_->graph().nodes[index];
  const bool shapes_only = node.kernel->ReadsOnlyInputShapes();
  absl::InlinedVector<ConstTensorView, 4> in;
  for (int id : node.inputs) {
    if (id < 0) {
      in.emplace_back();
      continue;
    }
    const TensorInfo& info = values_[id].info;
    if (info.constant_data == nullptr && !shapes_only) return absl::OkStatus();
    in.push_back({info.dtype, &info.shape, info.constant_data});
  }
  size_t bytes = 0;
  for (int id : node.outputs) bytes += id < 0 ? 0 : values_[id].byte_size;
  if (bytes > kMaxFoldedBytes) return absl::OkStatus();
  absl::InlinedVector<TensorView, 2> out;
  for (int id : node.outputs) {
    if (id < 0) {
      out.emplace_back();
      continue;
    }
    AlignedBuffer buffer;
    // At least one byte, so an empty tensor's value still reads as known.
    if (absl::Status s =
            buffer.Reserve(std::max<size_t>(values_[id].byte_size, 1));
        !s.ok())
      return s;
    out.push_back(
        {values_[id].info.dtype, &values_[id].info.shape, buffer.data()});
    folded_data_.push_back(std::move(buffer));
  }
  if (absl::Status s = node.kernel->Run(in, out); !s.ok()) return s;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] >= 0)
      values_[node.outputs[o]].info.constant_data = out[o].data;
  }
  folded_[index] = true;
  return absl::OkStatus();
}

absl::Status ExecutionPlan::PrepareNodes() {
  const Graph& graph = model_->graph();
  prepared_.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (folded_[n]) continue;
    const GraphNode& node = graph.nodes[n];
    absl::InlinedVector<TensorInfo, 4> inputs;
    for (int id : node.inputs)
      inputs.push_back(id < 0 ? TensorInfo{} : values_[id].info);
    absl::InlinedVector<TensorInfo, 2> outputs;
    for (int id : node.outputs)
      outputs.push_back(id < 0 ? TensorInfo{} : values_[id].info);
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

void ExecutionPlan::AssignStorage() {
  const Graph& graph = model_->graph();
  for (size_t id = 0; id < values_.size(); ++id) {
    if (graph.constants[id]) values_[id].storage = ValueStorage::kConstant;
  }
  for (size_t i = 0; i < input_values_.size(); ++i) {
    values_[input_values_[i]].storage = ValueStorage::kInput;
    values_[input_values_[i]].io_index = static_cast<int>(i);
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int id : graph.nodes[n].outputs) {
      if (id < 0) continue;
      values_[id].storage =
          folded_[n] ? ValueStorage::kConstant : ValueStorage::kArena;
    }
  }
  // A node-produced graph output is written straight into the caller's
  // output buffer (its first listing, if listed twice).
  for (size_t i = 0; i < output_values_.size(); ++i) {
    PlannedValue& v = values_[output_values_[i]];
    if (v.storage == ValueStorage::kArena) {
      v.storage = ValueStorage::kOutput;
      v.io_index = static_cast<int>(i);
    }
  }
}

// The arena starts with the table of tensor addresses Execute fills. Then
// intermediate tensors get blocks from their producer to their last
// consumer; a block is released only after the consuming node's outputs are
// placed, so no kernel's output overlaps its inputs. A prepared kernel's
// scratch block lives during its node only.
void ExecutionPlan::PlanArena() {
  const std::vector<GraphNode>& nodes = model_->graph().nodes;
  ArenaPlanner planner;
  planner.Allocate(values_.size() * sizeof(char*));  // at offset 0, never freed
  scratch_offsets_.assign(nodes.size(), 0);
  std::vector<int> last_use(values_.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (folded_[n]) continue;
    for (int id : nodes[n].inputs)
      if (id >= 0) last_use[id] = static_cast<int>(n);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (folded_[n]) continue;
    for (int id : nodes[n].outputs) {
      if (id >= 0 && values_[id].storage == ValueStorage::kArena) {
        values_[id].arena_offset = planner.Allocate(values_[id].byte_size);
      }
    }
    if (prepared_[n] != nullptr && prepared_[n]->scratch_bytes() > 0) {
      const size_t bytes = prepared_[n]->scratch_bytes();
      scratch_offsets_[n] = planner.Allocate(bytes);
      planner.Free(scratch_offsets_[n], bytes);
    }
    auto release = [&](int id) {
      if (id >= 0 && values_[id].storage == ValueStorage::kArena &&
          last_use[id] <= static_cast<int>(n)) {
        planner.Free(values_[id].arena_offset, values_[id].byte_size);
        last_use[id] = std::numeric_limits<int>::max();  // freed
      }
    };
    for (int id : nodes[n].inputs) release(id);
    for (int id : nodes[n].outputs) release(id);
  }
  arena_bytes_ = planner.peak_bytes();
}

absl::Status ExecutionPlan::Execute(absl::Span<const char* const> inputs,
                                    absl::Span<char* const> outputs,
                                    char* arena, NodeProfile* profile) const {
  // The address table lives in the arena, so Execute allocates nothing.
  char** data = reinterpret_cast<char**>(arena);
  for (size_t id = 0; id < values_.size(); ++id) {
    const PlannedValue& v = values_[id];
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
      case ValueStorage::kArena:
        data[id] = arena + v.arena_offset;
        break;
      case ValueStorage::kOutput:
        data[id] = outputs[v.io_index];
        break;
    }
  }
  const std::vector<GraphNode>& nodes = model_->graph().nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (folded_[n]) continue;
    const GraphNode& node = nodes[n];
    // Inline room for every common operator, so no run allocates.
    absl::InlinedVector<ConstTensorView, 8> in;
    for (int id : node.inputs) {
      in.push_back(id < 0 ? ConstTensorView{}
                          : ConstTensorView{values_[id].info.dtype,
                                            &values_[id].info.shape, data[id]});
    }
    absl::InlinedVector<TensorView, 4> out;
    for (int id : node.outputs) {
      out.push_back(id < 0 ? TensorView{}
                           : TensorView{values_[id].info.dtype,
                                        &values_[id].info.shape, data[id]});
    }
    const auto start = profile != nullptr
                           ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point{};
    absl::Status s =
        prepared_[n] != nullptr
            ? prepared_[n]->Run(in, out, arena + scratch_offsets_[n])
            : node.kernel->Run(in, out);
    if (profile != nullptr) {
      profile->Add(n, std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("node '", node.name, "' (op '", node.op_type,
                                 "'): ", s.message()));
    }
  }
  // Outputs that are inputs, constants or repeated are copied.
  for (size_t i = 0; i < output_values_.size(); ++i) {
    const PlannedValue& v = values_[output_values_[i]];
    if (v.storage == ValueStorage::kOutput && v.io_index == static_cast<int>(i))
      continue;
    if (v.byte_size > 0)
      std::memcpy(outputs[i], data[output_values_[i]], v.byte_size);
  }
  return absl::OkStatus();
}

}  // namespace coalesce
