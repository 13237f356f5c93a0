#include "engine/model.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/external_data.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& proto) {
  for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  }
  return absl::InvalidArgumentError("model imports no default-domain opset");
}

// NonZero's output shape is its input's count of nonzero values, so the
// planner must know that input: computed from initializers and shapes
// (Shape, Size), never from a request's data. Refused at load, naming every
// such node, rather than at the first request.
absl::Status RefuseRunTimeNonZero(const Graph& graph) {
  std::vector<bool> from_data(graph.value_names.size(), false);
  for (int id : graph.inputs) from_data[id] = true;
  std::vector<std::string> refused;
  for (const GraphNode& node : graph.nodes) {
    bool data = false;
    if (node.op_type != "Shape" && node.op_type != "Size") {
      for (int id : node.inputs) data = data || (id >= 0 && from_data[id]);
    }
    for (int id : node.outputs)
      if (id >= 0) from_data[id] = data;
    if (node.op_type == "NonZero" && node.domain.empty() &&
        !node.inputs.empty() && node.inputs[0] >= 0 &&
        from_data[node.inputs[0]]) {
      refused.push_back(absl::StrCat("node '", node.name, "' (op 'NonZero')"));
    }
  }
  if (refused.empty()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      absl::StrJoin(refused, ", "),
      ": NonZero of data known only at run time (its output shape depends on "
      "the values) is not supported; its input must be computed from "
      "constants or shapes"));
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Model>> Model::LoadFromFile(
    const std::string& path, const ModelOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return absl::NotFoundError(
        absl::StrCat("cannot open model file '", path, "'"));
  std::stringstream contents;
  contents << file.rdbuf();
  const ExternalData external(std::filesystem::path(path).parent_path());
  absl::StatusOr<std::shared_ptr<const Model>> model =
      Load(contents.str(), options, &external);
  if (!model.ok())
    return Prefixed(absl::StrCat("'", path, "': "), model.status());
  return model;
}

absl::StatusOr<std::shared_ptr<const Model>> Model::LoadFromBytes(
    std::string_view bytes, const ModelOptions& options) {
  return Load(bytes, options, nullptr);
}

absl::StatusOr<std::shared_ptr<const Model>> Model::Load(
    std::string_view bytes, const ModelOptions& options,
    const ExternalData* external) {
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        "cannot parse the ONNX model (not a ModelProto, or truncated)");
  }
  if (!proto.has_graph())
    return absl::InvalidArgumentError("the model has no graph");
  absl::StatusOr<int64_t> opset = DefaultOpset(proto);
  if (!opset.ok()) return opset.status();

  // The rewrites keep every graph input and output (names and declared
  // types, FP16/BF16 included), so the signature read below is the one the
  // file declares.
  if (absl::Status s = OptimizeGraph(options.optimizer, *opset,
                                     proto.mutable_graph(), external);
      !s.ok())
    return s;
  auto model = FromOptimized(proto.graph(), *opset, external);
  if (!model.ok()) return model.status();
  if (options.token_packing) {
    AddPackedForm(*model, proto.mutable_graph(), external);
  }
  return std::shared_ptr<const Model>(*std::move(model));
}

absl::StatusOr<std::shared_ptr<Model>> Model::FromOptimized(
    const onnx::GraphProto& proto, int64_t opset,
    const ExternalData* external) {
  std::shared_ptr<Model> model(new Model());
  model->opset_version_ = opset;
  absl::StatusOr<Graph> graph =
      BuildGraph(proto, opset, OpRegistry::Builtin(), external);
  if (!graph.ok()) return graph.status();
  if (absl::Status s = RefuseRunTimeNonZero(*graph); !s.ok()) return s;
  model->graph_ = *std::move(graph);

  // The graph's inputs are the listed inputs that nothing else defines (an
  // initializer or a Constant node): the signature takes the same ones, in
  // the same order, so that planning pairs them up.
  absl::flat_hash_set<std::string> graph_inputs;
  for (int id : model->graph_.inputs)
    graph_inputs.insert(model->graph_.value_names[id]);
  for (const onnx::ValueInfoProto& input : proto.input()) {
    if (!graph_inputs.erase(input.name())) continue;
    absl::StatusOr<TensorSpec> spec = ImportValueInfo(input);
    if (!spec.ok()) return Prefixed("graph input ", spec.status());
    model->signature_.inputs.push_back(*std::move(spec));
    model->input_has_shape_.push_back(input.type().tensor_type().has_shape());
  }
  for (const onnx::ValueInfoProto& output : proto.output()) {
    absl::StatusOr<TensorSpec> spec = ImportValueInfo(output);
    if (!spec.ok()) return Prefixed("graph output ", spec.status());
    model->signature_.outputs.push_back(*std::move(spec));
  }
  return model;
}

// The packed model's constants are this one's where names match, so that
// the weights are held once.
void Model::AddPackedForm(const std::shared_ptr<Model>& model,
                          onnx::GraphProto* proto,
                          const ExternalData* external) {
  absl::StatusOr<TokenPacking> packing = RewriteForTokenPacking(model, proto);
  if (!packing.ok()) {
    model->packing_refusal_ = std::string(packing.status().message());
    return;
  }
  auto packed = FromOptimized(*proto, model->opset_version_, external);
  if (!packed.ok()) {
    model->packing_refusal_ = absl::StrCat("token packing: the packed graph: ",
                                           packed.status().message());
    return;
  }
  const Graph& graph = model->graph_;
  absl::flat_hash_map<std::string_view, int> constant_ids;
  for (size_t id = 0; id < graph.value_names.size(); ++id) {
    if (graph.constants[id] != nullptr)
      constant_ids[graph.value_names[id]] = static_cast<int>(id);
  }
  Graph& g = (*packed)->graph_;
  for (size_t id = 0; id < g.value_names.size(); ++id) {
    auto it = constant_ids.find(g.value_names[id]);
    if (g.constants[id] != nullptr && it != constant_ids.end() &&
        graph.constants[it->second]->byte_size == g.constants[id]->byte_size)
      g.constants[id] = graph.constants[it->second];
  }
  if (absl::Status s = CheckPackedAgreesWithPadded(
          model, *packed, packing->mask_input, &packing->pads_with_zero_rows);
      !s.ok()) {
    model->packing_refusal_ = std::string(s.message());
    return;
  }
  model->packing_ = *packing;
  model->packed_ = *std::move(packed);
}

}  // namespace coalesce
