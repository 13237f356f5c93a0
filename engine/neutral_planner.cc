#include "engine/neutral_planner.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/aligned_buffer.h"
#include "engine/op_kernel.h"
#include "engine/schema/op_schema.h"
#include "engine/string_ref.h"
#include "engine/string_store.h"

namespace coalesce {
namespace {

// Outputs up to this size are computed while planning when their inputs are
// known; shape arithmetic is a few dozen bytes.
constexpr size_t kMaxFoldedBytes = 64 * 1024;

// The byte size of a tensor, or InvalidArgument naming it when its shape has
// negative dims, overflows or exceeds kMaxTensorBytes.
absl::StatusOr<size_t> CheckedByteSize(const TensorInfo& info,
                                       const std::string& name) {
  std::optional<int64_t> count = ElementCount(info.shape);
  std::optional<size_t> bytes =
      count ? CheckedStorageBytes(*count, info.dtype) : std::nullopt;
  if (!bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output '", name, "' would have shape ", ShapeToString(info.shape),
        ", which is negative or larger than 1 TiB"));
  }
  return *bytes;
}

PlanNode PlanNodeOf(const GraphNode& node) {
  return {&node.name,          &node.op_type, &node.domain, &node.attributes,
          node.resolved.get(), node.inputs,   node.outputs, false};
}

class Planner {
 public:
  explicit Planner(std::shared_ptr<const Model> model)
      : model_(std::move(model)), graph_(model_->graph()) {}

  absl::StatusOr<std::shared_ptr<const NeutralPlan>> Build(
      const std::vector<Shape>& input_shapes) {
    plan_ = std::make_shared<NeutralPlan>();
    folded_strings_ = nullptr;
    plan_->owner.push_back(model_);
    plan_->value_names = &graph_.value_names;
    plan_->opset = model_->opset_version();
    if (absl::Status s = BindInputs(input_shapes); !s.ok()) return s;
    if (absl::Status s = InferNodes(); !s.ok()) return s;
    AssignStorage();
    return std::shared_ptr<const NeutralPlan>(std::move(plan_));
  }

 private:
  absl::Status BindInputs(const std::vector<Shape>& input_shapes);
  absl::Status InferNodes();
  absl::Status InferNode(const GraphNode& node);
  // Computes node `index` now when its outputs are knowable at plan time.
  absl::Status MaybeFold(size_t index);
  void AssignStorage();
  std::string DescribeInputs(const GraphNode& node) const;
  // The plan-owned store for strings computed while planning.
  StringStore* FoldedStrings();

  std::shared_ptr<const Model> model_;
  const Graph& graph_;
  std::shared_ptr<NeutralPlan> plan_;
  StringStore* folded_strings_ = nullptr;  // owned by plan_->owner
};

StringStore* Planner::FoldedStrings() {
  if (folded_strings_ == nullptr) {
    auto store = std::make_shared<StringStore>();
    folded_strings_ = store.get();
    plan_->owner.push_back(std::move(store));
  }
  return folded_strings_;
}

absl::Status Planner::BindInputs(const std::vector<Shape>& input_shapes) {
  const ModelSignature& sig = model_->signature();
  std::vector<PlannedValue>& values = plan_->values;
  values.resize(graph_.value_names.size());
  for (size_t id = 0; id < values.size(); ++id) {
    if (const ConstantTensor* c = graph_.constants[id].get()) {
      values[id].info = {c->dtype, c->shape, c->bytes()};
      values[id].byte_size = c->byte_size;
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
    const int id = graph_.inputs[i];
    values[id].info = info;
    values[id].byte_size = *bytes;
    plan_->inputs.push_back(id);
  }
  plan_->outputs = graph_.outputs;
  return absl::OkStatus();
}

std::string Planner::DescribeInputs(const GraphNode& node) const {
  std::vector<std::string> parts;
  for (int id : node.inputs) {
    if (id < 0) continue;
    parts.push_back(absl::StrCat("'", graph_.value_names[id], "' ",
                                 ShapeToString(plan_->values[id].info.shape)));
  }
  return absl::StrJoin(parts, ", ");
}

absl::Status Planner::InferNodes() {
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const GraphNode& node = graph_.nodes[n];
    plan_->nodes.push_back(PlanNodeOf(node));
    if (absl::Status s = InferNode(node); !s.ok()) return s;
    if (absl::Status s = MaybeFold(n); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("node '", node.name, "' (op '", node.op_type,
                                 "') while planning: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Planner::InferNode(const GraphNode& node) {
  std::vector<PlannedValue>& values = plan_->values;
  absl::InlinedVector<TensorInfo, 4> inputs;
  for (int id : node.inputs)
    inputs.push_back(id < 0 ? TensorInfo{} : values[id].info);
  absl::InlinedVector<TensorInfo, 2> outputs(node.outputs.size());
  // The schema infers where it can; the others' CPU kernels still do.
  const absl::Status inferred =
      node.schema != nullptr && node.schema->infers()
          ? node.schema->Infer(*node.resolved, inputs, absl::MakeSpan(outputs))
          : node.kernel->Infer(inputs, absl::MakeSpan(outputs));
  if (absl::Status s = inferred; !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name, "' (op '", node.op_type, "') with inputs ",
        DescribeInputs(node), ": ", s.message()));
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] < 0) continue;
    PlannedValue& v = values[node.outputs[o]];
    v.info = std::move(outputs[o]);
    absl::StatusOr<size_t> bytes =
        CheckedByteSize(v.info, graph_.value_names[node.outputs[o]]);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' (op '", node.op_type,
                       "'): ", bytes.status().message()));
    }
    v.byte_size = *bytes;
  }
  return absl::OkStatus();
}

absl::Status Planner::MaybeFold(size_t index) {
  const GraphNode& node = graph_.nodes[index];
  std::vector<PlannedValue>& values = plan_->values;
  const bool shapes_only = node.kernel->ReadsOnlyInputShapes();
  absl::InlinedVector<ConstTensorView, 4> in;
  for (int id : node.inputs) {
    if (id < 0) {
      in.emplace_back();
      continue;
    }
    const TensorInfo& info = values[id].info;
    if (info.constant_data == nullptr && !shapes_only) return absl::OkStatus();
    in.push_back({info.dtype, &info.shape, info.constant_data});
  }
  size_t bytes = 0;
  for (int id : node.outputs) bytes += id < 0 ? 0 : values[id].byte_size;
  if (bytes > kMaxFoldedBytes) return absl::OkStatus();
  absl::InlinedVector<TensorView, 2> out;
  for (int id : node.outputs) {
    if (id < 0) {
      out.emplace_back();
      continue;
    }
    auto buffer = std::make_shared<AlignedBuffer>();
    // At least one byte, so an empty tensor's value still reads as known.
    if (absl::Status s =
            buffer->Reserve(std::max<size_t>(values[id].byte_size, 1));
        !s.ok())
      return s;
    const DataType dtype = values[id].info.dtype;
    out.push_back({dtype, &values[id].info.shape, buffer->data(),
                   dtype == DataType::kBytes ? FoldedStrings() : nullptr});
    plan_->owner.push_back(std::move(buffer));
  }
  if (absl::Status s = node.kernel->Run(in, out); !s.ok()) return s;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] >= 0)
      values[node.outputs[o]].info.constant_data = out[o].data;
  }
  plan_->nodes[index].folded = true;
  return absl::OkStatus();
}

void Planner::AssignStorage() {
  std::vector<PlannedValue>& values = plan_->values;
  for (size_t id = 0; id < values.size(); ++id) {
    if (graph_.constants[id]) values[id].storage = ValueStorage::kConstant;
  }
  for (size_t i = 0; i < plan_->inputs.size(); ++i) {
    values[plan_->inputs[i]].storage = ValueStorage::kInput;
    values[plan_->inputs[i]].io_index = static_cast<int>(i);
  }
  for (const PlanNode& node : plan_->nodes) {
    for (int id : node.outputs) {
      if (id < 0) continue;
      values[id].storage =
          node.folded ? ValueStorage::kConstant : ValueStorage::kIntermediate;
    }
  }
  // A node-produced model output is written straight into the caller's
  // output buffer (its first listing, if listed twice).
  for (size_t i = 0; i < plan_->outputs.size(); ++i) {
    PlannedValue& v = values[plan_->outputs[i]];
    if (v.storage == ValueStorage::kIntermediate) {
      v.storage = ValueStorage::kOutput;
      v.io_index = static_cast<int>(i);
    }
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const NeutralPlan>> BuildNeutralPlan(
    std::shared_ptr<const Model> model,
    const std::vector<Shape>& input_shapes) {
  return Planner(std::move(model)).Build(input_shapes);
}

NeutralPlanner MakeNeutralPlanner(std::shared_ptr<const Model> model) {
  return [model](const std::vector<Shape>& input_shapes) {
    return BuildNeutralPlan(model, input_shapes);
  };
}

std::vector<PlanNode> ModelNodes(const Model& model) {
  std::vector<PlanNode> nodes;
  for (const GraphNode& node : model.graph().nodes)
    nodes.push_back(PlanNodeOf(node));
  return nodes;
}

}  // namespace coalesce
