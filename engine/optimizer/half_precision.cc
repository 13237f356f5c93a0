// Half precision in FP32: a model that uses FLOAT16 or BFLOAT16 is rewritten
// to compute in FLOAT, because the CPU kernels are FP32 (docs/engine.md,
// "Half precision"). What the server sees stays as the file declares:
//   - FLOAT16/BFLOAT16 initializers, Constant values and every other tensor
//     attribute (ConstantOfShape's `value`) become FLOAT tensors of the same
//     values (exact);
//   - a half graph input keeps its type; a Cast to FLOAT reads it and feeds
//     its consumers. Cast consumers keep reading it directly (a Cast converts
//     from any type), so a model that already casts its inputs gets no node;
//   - a half graph output keeps its name and type; its producer now writes a
//     renamed FLOAT value, which a Cast to the declared type (round to
//     nearest even) turns into the output. A producer that already is a Cast
//     to the declared type, read by nothing else, stays as it is;
//   - every other Cast to FLOAT16/BFLOAT16 becomes a Cast to FLOAT;
//   - value_info annotations of intermediates become FLOAT (the engine infers
//     types itself; they are kept consistent for readers of the graph).
// A graph without FLOAT16/BFLOAT16 anywhere is not touched. Subgraphs
// (If/Loop/Scan bodies) are not rewritten: the engine has none of those ops.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"
#include "engine/optimizer/passes.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

bool IsHalf(int64_t elem_type) {
  return elem_type == onnx::TensorProto::FLOAT16 ||
         elem_type == onnx::TensorProto::BFLOAT16;
}

// The element type a graph input, output or value_info declares; UNDEFINED
// for a non-tensor type.
int32_t ElemTypeOf(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) return onnx::TensorProto::UNDEFINED;
  return info.type().tensor_type().elem_type();
}

void SetElemType(onnx::ValueInfoProto& info, int32_t elem_type) {
  info.mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

bool IsCast(const onnx::NodeProto& node) {
  return node.op_type() == "Cast" && IsDefaultDomain(node);
}

// A Cast's `to`; UNDEFINED when it has none (BuildGraph rejects it later).
int64_t CastTarget(const onnx::NodeProto& node) {
  const onnx::AttributeProto* to = FindAttr(node, "to");
  if (to == nullptr) return onnx::TensorProto::UNDEFINED;
  return to->i();
}

bool NodeMentionsHalf(const onnx::NodeProto& node) {
  if (IsCast(node) && IsHalf(CastTarget(node))) return true;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_t() && IsHalf(a.t().data_type())) return true;
    for (const onnx::TensorProto& t : a.tensors())
      if (IsHalf(t.data_type())) return true;
  }
  return false;
}

bool MentionsHalf(const onnx::GraphProto& graph) {
  for (const auto* infos :
       {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& info : *infos)
      if (IsHalf(ElemTypeOf(info))) return true;
  }
  for (const onnx::TensorProto& t : graph.initializer())
    if (IsHalf(t.data_type())) return true;
  for (const onnx::NodeProto& node : graph.node())
    if (NodeMentionsHalf(node)) return true;
  return false;
}

// Rewrites a FLOAT16/BFLOAT16 tensor as the FLOAT tensor of the same values
// (every half value is a float, so this is exact). InvalidArgument naming
// the tensor when it cannot be read.
absl::Status ToFloatTensor(const GraphEditor& editor,
                           onnx::TensorProto& tensor) {
  absl::StatusOr<std::unique_ptr<ConstantTensor>> c = editor.ReadTensor(tensor);
  if (!c.ok()) return c.status();
  const bool bf16 = tensor.data_type() == onnx::TensorProto::BFLOAT16;
  const size_t count = (*c)->byte_size / sizeof(uint16_t);
  const uint16_t* bits = reinterpret_cast<const uint16_t*>((*c)->bytes());
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = bf16 ? kernels::Bf16BitsToFloat(bits[i])
                     : kernels::HalfBitsToFloat(bits[i]);
  }
  onnx::TensorProto converted;
  converted.set_name(tensor.name());
  converted.set_data_type(onnx::TensorProto::FLOAT);
  *converted.mutable_dims() = tensor.dims();
  converted.set_raw_data(values.data(), values.size() * sizeof(float));
  tensor = std::move(converted);
  return absl::OkStatus();
}

onnx::NodeProto MakeCast(const std::string& input, const std::string& output,
                         int32_t to) {
  onnx::NodeProto node;
  node.set_name(absl::StrCat("Cast_", output));
  node.set_op_type("Cast");
  node.add_input(input);
  node.add_output(output);
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name("to");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(to);
  return node;
}

class HalfToFloat {
 public:
  explicit HalfToFloat(GraphEditor& editor)
      : editor_(editor), graph_(editor.graph()) {}

  absl::Status Run() {
    CollectNames();
    if (absl::Status s = ConvertConstants(); !s.ok()) return s;
    CastOutputsBack();
    CastInputsToFloat();
    RetargetCasts();
    RetypeValueInfos();
    InstallEdgeCasts();
    return absl::OkStatus();
  }

 private:
  void CollectNames();
  absl::Status ConvertConstants();
  void CastOutputsBack();
  void CastInputsToFloat();
  void RetargetCasts();
  void RetypeValueInfos();
  void InstallEdgeCasts();
  // Renames the value `from` wherever the graph defines or reads it, except
  // in the graph's output list (and its input list, unless `from` is an
  // initializer listed there, as IR < 4 does).
  void RenameValue(const std::string& from, const std::string& to);

  GraphEditor& editor_;
  onnx::GraphProto& graph_;
  absl::flat_hash_set<std::string> initializers_;
  absl::flat_hash_set<std::string> signature_names_;  // inputs and outputs
  absl::flat_hash_map<std::string, int> node_uses_;   // from node inputs only
  absl::flat_hash_set<const onnx::NodeProto*> kept_casts_;
  std::vector<onnx::NodeProto> input_casts_;
  std::vector<onnx::NodeProto> output_casts_;
};

void HalfToFloat::CollectNames() {
  for (const onnx::TensorProto& t : graph_.initializer())
    initializers_.insert(t.name());
  for (const onnx::ValueInfoProto& in : graph_.input())
    signature_names_.insert(in.name());
  for (const onnx::ValueInfoProto& out : graph_.output())
    signature_names_.insert(out.name());
  for (const onnx::NodeProto& node : graph_.node())
    for (const std::string& in : node.input())
      if (!in.empty()) ++node_uses_[in];
}

absl::Status HalfToFloat::ConvertConstants() {
  for (onnx::TensorProto& t : *graph_.mutable_initializer()) {
    if (!IsHalf(t.data_type())) continue;
    if (absl::Status s = ToFloatTensor(editor_, t); !s.ok()) return s;
  }
  // Initializers listed as graph inputs (IR < 4) are constants, not part of
  // the signature: their entries follow the initializers' new type.
  for (onnx::ValueInfoProto& in : *graph_.mutable_input()) {
    if (initializers_.contains(in.name()) && IsHalf(ElemTypeOf(in)))
      SetElemType(in, onnx::TensorProto::FLOAT);
  }
  for (onnx::NodeProto& node : *graph_.mutable_node()) {
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_t() && IsHalf(a.t().data_type())) {
        if (absl::Status s = ToFloatTensor(editor_, *a.mutable_t()); !s.ok())
          return s;
      }
      for (onnx::TensorProto& t : *a.mutable_tensors()) {
        if (!IsHalf(t.data_type())) continue;
        if (absl::Status s = ToFloatTensor(editor_, t); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

void HalfToFloat::CastOutputsBack() {
  absl::flat_hash_set<std::string> inputs, done;
  for (const onnx::ValueInfoProto& in : graph_.input())
    if (!initializers_.contains(in.name())) inputs.insert(in.name());
  for (const onnx::ValueInfoProto& out : graph_.output()) {
    const std::string& name = out.name();
    const int32_t declared = ElemTypeOf(out);
    // A graph input passed through keeps its type as it is.
    if (!IsHalf(declared) || inputs.contains(name) || !done.insert(name).second)
      continue;
    onnx::NodeProto* producer = editor_.Producer(name);
    if (producer == nullptr && !initializers_.contains(name))
      continue;  // undefined: BuildGraph names it
    if (producer != nullptr && IsCast(*producer) &&
        CastTarget(*producer) == declared && !node_uses_.contains(name)) {
      kept_casts_.insert(producer);
      continue;
    }
    const std::string computed = editor_.UniqueName(name + "_fp32");
    RenameValue(name, computed);
    output_casts_.push_back(MakeCast(computed, name, declared));
  }
}

void HalfToFloat::CastInputsToFloat() {
  for (const onnx::ValueInfoProto& in : graph_.input()) {
    if (initializers_.contains(in.name()) || !IsHalf(ElemTypeOf(in))) continue;
    std::string converted;  // made on the first non-Cast consumer
    for (onnx::NodeProto& node : *graph_.mutable_node()) {
      if (IsCast(node)) continue;
      for (std::string& value : *node.mutable_input()) {
        if (value != in.name()) continue;
        if (converted.empty()) {
          converted = editor_.UniqueName(in.name() + "_fp32");
          input_casts_.push_back(
              MakeCast(in.name(), converted, onnx::TensorProto::FLOAT));
        }
        value = converted;
      }
    }
  }
}

void HalfToFloat::RetargetCasts() {
  for (onnx::NodeProto& node : *graph_.mutable_node()) {
    if (!IsCast(node) || !IsHalf(CastTarget(node)) ||
        kept_casts_.contains(&node))
      continue;
    for (onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.name() == "to") a.set_i(onnx::TensorProto::FLOAT);
  }
}

void HalfToFloat::RetypeValueInfos() {
  for (onnx::ValueInfoProto& info : *graph_.mutable_value_info()) {
    if (IsHalf(ElemTypeOf(info)) && !signature_names_.contains(info.name()))
      SetElemType(info, onnx::TensorProto::FLOAT);
  }
}

// Input casts first and output casts last, so the node list stays in
// topological order when it was.
void HalfToFloat::InstallEdgeCasts() {
  if (!input_casts_.empty() || !output_casts_.empty()) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (onnx::NodeProto& cast : input_casts_) *nodes.Add() = std::move(cast);
    for (onnx::NodeProto& node : *graph_.mutable_node())
      *nodes.Add() = std::move(node);
    for (onnx::NodeProto& cast : output_casts_) *nodes.Add() = std::move(cast);
    graph_.mutable_node()->Swap(&nodes);
  }
  editor_.Refresh();
}

void HalfToFloat::RenameValue(const std::string& from, const std::string& to) {
  if (initializers_.contains(from)) {
    for (onnx::TensorProto& t : *graph_.mutable_initializer())
      if (t.name() == from) t.set_name(to);
    for (onnx::ValueInfoProto& in : *graph_.mutable_input())
      if (in.name() == from) in.set_name(to);
    initializers_.insert(to);
    initializers_.erase(from);
  }
  for (onnx::NodeProto& node : *graph_.mutable_node()) {
    for (std::string& in : *node.mutable_input())
      if (in == from) in = to;
    for (std::string& out : *node.mutable_output())
      if (out == from) out = to;
  }
  for (onnx::ValueInfoProto& info : *graph_.mutable_value_info())
    if (info.name() == from) info.set_name(to);
}

}  // namespace

absl::Status ComputeHalfInFloat(GraphEditor& editor) {
  if (!MentionsHalf(editor.graph())) return absl::OkStatus();
  return HalfToFloat(editor).Run();
}

}  // namespace coalesce
