// RewriteForTokenPacking (token_packing.h): the probes, the region, and the
// edits of the graph.
#include "engine/token_packing.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/attention_pattern.h"
#include "engine/model.h"
#include "engine/neutral_plan.h"
#include "engine/neutral_planner.h"
#include "engine/op_registry.h"
#include "engine/optimizer/graph_editor.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

// Two probe shapes: batch 2 and 3, sequence 11 and 13 unless fixed.
constexpr int64_t kProbeBatch[2] = {2, 3};
constexpr int64_t kProbeSeq[2] = {11, 13};

absl::Status Refuse(absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat("token packing: ", why));
}

struct Probes {
  std::shared_ptr<const NeutralPlan> plan[2];
  int64_t seq[2] = {0, 0};
};

// Every input [batch, seq] with a dynamic batch; the two probe plans.
absl::StatusOr<Probes> PlanProbes(const std::shared_ptr<const Model>& model) {
  const ModelSignature& sig = model->signature();
  if (sig.inputs.empty()) return Refuse("the model has no inputs");
  int64_t fixed_seq = -1;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSpec& in = sig.inputs[i];
    if (!model->input_has_shape(static_cast<int>(i)) || in.dims.size() != 2) {
      return Refuse(
          absl::StrCat("input '", in.name, "' is not [batch, sequence]"));
    }
    if (in.dims[0] != -1) {
      return Refuse(absl::StrCat("input '", in.name, "' has a fixed batch"));
    }
    if (in.dims[1] == -1) continue;
    if (fixed_seq != -1 && fixed_seq != in.dims[1]) {
      return Refuse("the inputs disagree on the sequence length");
    }
    fixed_seq = in.dims[1];
  }
  Probes probes;
  for (int k = 0; k < 2; ++k) {
    probes.seq[k] = fixed_seq > 0 ? fixed_seq : kProbeSeq[k];
    std::vector<Shape> shapes(sig.inputs.size(),
                              Shape{kProbeBatch[k], probes.seq[k]});
    auto plan = BuildNeutralPlan(model, shapes);
    if (!plan.ok()) return plan.status();
    probes.plan[k] = *std::move(plan);
  }
  return probes;
}

bool IsDefaultDomain(const PlanNode& n) {
  return n.domain->empty() || *n.domain == "ai.onnx";
}
bool IsInternal(const PlanNode& n) {
  return *n.domain == OpRegistry::kInternalDomain;
}
bool IsProduct(const PlanNode& n) {
  return ((*n.op_type == "MatMul" || *n.op_type == "Gemm") &&
          IsDefaultDomain(n)) ||
         ((*n.op_type == "FusedMatMul" || *n.op_type == "FusedGemm") &&
          IsInternal(n));
}

bool IsGemm(const PlanNode& n) {
  return *n.op_type == "Gemm" || *n.op_type == "FusedGemm";
}

// Which plan values are token rows and which nodes compute them row by row.
class RowAnalysis {
 public:
  RowAnalysis(const Probes& probes, int64_t opset)
      : p_(probes), opset_(opset) {}

  // Float32 [batch, seq, E], or [batch * seq, E] (GPT-2's dense layers
  // run on such reshapes), E the same in both probes, not a constant.
  bool TokenRows(int id) const {
    if (id < 0) return false;
    const TensorInfo& a = p_.plan[0]->values[id].info;
    const TensorInfo& b = p_.plan[1]->values[id].info;
    if (a.constant_data != nullptr || a.dtype != DataType::kFp32) return false;
    if (a.shape.size() != b.shape.size() || a.shape.back() != b.shape.back())
      return false;
    if (a.shape.size() == 2) {
      return a.shape[0] == kProbeBatch[0] * p_.seq[0] &&
             b.shape[0] == kProbeBatch[1] * p_.seq[1];
    }
    return a.shape.size() == 3 && a.shape[0] == kProbeBatch[0] &&
           a.shape[1] == p_.seq[0] && b.shape[0] == kProbeBatch[1] &&
           b.shape[1] == p_.seq[1];
  }
  int64_t Width(int id) const {
    return p_.plan[0]->values[id].info.shape.back();
  }
  // 2 for [batch * seq, E] token rows, 3 for [batch, seq, E].
  size_t Rank(int id) const { return p_.plan[0]->values[id].info.shape.size(); }

  // A constant of rank <= 3 broadcast over rows: every dim but the last 1.
  bool RowConstant(int id) const {
    if (id < 0) return false;
    const TensorInfo& a = p_.plan[0]->values[id].info;
    if (a.constant_data == nullptr || a.shape.size() > 3) return false;
    for (size_t d = 0; d + 1 < a.shape.size(); ++d) {
      if (a.shape[d] != 1) return false;
    }
    return true;
  }
  bool ConstantOfRank(int id, size_t rank) const {
    if (id < 0) return false;
    const TensorInfo& a = p_.plan[0]->values[id].info;
    return a.constant_data != nullptr && a.shape.size() == rank;
  }

  // Whether node `n` computes each token row of its outputs from that row
  // of its inputs alone (token_packing.h lists the operators).
  bool RowWise(const PlanNode& n) const {
    if (n.folded || n.outputs.empty()) return false;
    for (int o : n.outputs) {
      if (!TokenRows(o)) return false;
    }
    const std::string& op = *n.op_type;
    auto in = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
    if (IsProduct(n)) {
      if (n.inputs.size() > 4 || !TokenRows(in(0)) ||
          !ConstantOfRank(in(1), 2)) {
        return false;
      }
      // Gemm: A's rows are the tokens (not transposed), C a row constant.
      if (IsGemm(n) && (n.inputs.size() > 3 || Attribute(n, "transA") != 0))
        return false;
      if (in(2) >= 0 && !RowConstant(in(2))) return false;
      return in(3) < 0 || TokenRows(in(3)) || RowConstant(in(3));
    }
    if (op == "Gelu" && (IsInternal(n) || IsDefaultDomain(n))) {
      return TokenRows(in(0));
    }
    if (!IsDefaultDomain(n)) return false;
    if (op == "Reshape") {
      // Between [batch, seq, E] and [batch * seq, E]: packed, nothing.
      return n.outputs.size() == 1 && TokenRows(in(0)) &&
             Width(in(0)) == Width(n.outputs[0]);
    }
    if (op == "LayerNormalization") {
      if (n.outputs.size() != 1 || !LastAxis(n, -1, Rank(n.outputs[0])))
        return false;
      return TokenRows(in(0)) && (in(1) < 0 || RowConstant(in(1))) &&
             (in(2) < 0 || RowConstant(in(2)));
    }
    if (op == "Softmax") {
      return opset_ >= 13 && TokenRows(in(0)) && LastAxis(n, -1, Rank(in(0)));
    }
    static const absl::flat_hash_set<std::string> kElementwise = {
        "Add",  "Sub",     "Mul",  "Div", "Pow",  "Sqrt",    "Erf",
        "Tanh", "Sigmoid", "Relu", "Neg", "Cast", "Identity"};
    if (!kElementwise.contains(op)) return false;
    bool any_rows = false;
    for (int i : n.inputs) {
      if (i < 0) continue;
      if (TokenRows(i)) {
        any_rows = true;
      } else if (!RowConstant(i)) {
        return false;
      }
    }
    return any_rows;
  }

 private:
  // Whether the node's "axis" attribute (`fallback` when absent) is the last
  // axis of a value of `rank`.
  static bool LastAxis(const PlanNode& n, int64_t fallback, size_t rank) {
    auto axis = n.attributes->GetInt("axis", fallback);
    return axis.ok() &&
           (*axis == -1 || *axis == static_cast<int64_t>(rank) - 1);
  }
  static int64_t Attribute(const PlanNode& n, const char* name) {
    auto value = n.attributes->GetInt(name, 0);
    return value.ok() ? *value : -1;
  }

  const Probes& p_;
  const int64_t opset_;
};

// The model input every attention's mask is computed from: a key padding
// mask (varying along keys), not also read as token ids by a Gather.
absl::StatusOr<int> MaskInput(const NeutralPlan& plan,
                              const std::vector<AttentionSite>& sites) {
  if (sites.empty()) return Refuse("no attention found");
  std::vector<int> producer(plan.values.size(), -1);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    for (int o : plan.nodes[n].outputs) {
      if (o >= 0) producer[o] = static_cast<int>(n);
    }
  }
  int mask_input = -1;
  for (const AttentionSite& site : sites) {
    if (site.mask.value < 0) {
      return Refuse("an attention has no mask (padded keys would be read)");
    }
    if (site.mask.strides[3] == 0) {
      return Refuse("an attention's mask does not vary along its keys");
    }
    absl::flat_hash_set<int> inputs, seen;
    std::vector<int> stack = {site.mask.value};
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (v < 0 || !seen.insert(v).second) continue;
      const PlannedValue& value = plan.values[v];
      if (value.storage == ValueStorage::kInput) inputs.insert(value.io_index);
      if (value.info.constant_data != nullptr || producer[v] < 0) continue;
      for (int i : plan.nodes[producer[v]].inputs) stack.push_back(i);
    }
    if (inputs.size() != 1) {
      return Refuse(absl::StrCat("an attention's mask is computed from ",
                                 inputs.size(),
                                 " model inputs, not from one padding mask"));
    }
    if (mask_input != -1 && mask_input != *inputs.begin()) {
      return Refuse("the attentions' masks come from different inputs");
    }
    mask_input = *inputs.begin();
  }
  const int mask_value = plan.inputs[mask_input];
  for (const PlanNode& node : plan.nodes) {
    if (*node.op_type == "Gather" && node.inputs.size() > 1 &&
        node.inputs[1] == mask_value) {
      return Refuse(
          "the input the attention masks come from is also looked up as "
          "token ids (a mask computed from the ids, such as ids != pad, is "
          "not a padding mask input)");
    }
  }
  return mask_input;
}

// Values that only attentions read (their q, k and v, or a packed
// projection only a Split into them reads): those may be unpacked with
// their padded rows any real row, since the attentions mask them as keys
// and their rows as queries are never read; any other value is unpacked
// with zeros there.
std::vector<bool> OnlyAttentionReads(const NeutralPlan& plan,
                                     const std::vector<AttentionSite>& sites) {
  std::vector<bool> operand(plan.values.size()), interior(plan.nodes.size());
  for (const AttentionSite& site : sites) {
    for (const AttentionOperand* o : {&site.q, &site.k, &site.v}) {
      if (o->value >= 0) operand[o->value] = true;
    }
    for (int n : site.nodes) interior[n] = true;
  }
  std::vector<std::vector<int>> readers(plan.values.size());
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    for (int i : plan.nodes[n].inputs) {
      if (i >= 0) readers[i].push_back(static_cast<int>(n));
    }
  }
  auto into_operands = [&](int n) {
    const PlanNode& node = plan.nodes[n];
    if (interior[n]) return true;
    if (*node.op_type != "Split") return false;
    for (int o : node.outputs) {
      if (o >= 0 && !operand[o]) return false;
    }
    return true;
  };
  std::vector<bool> only(plan.values.size());
  for (size_t v = 0; v < plan.values.size(); ++v) {
    if (readers[v].empty()) continue;
    only[v] = operand[v] ||
              std::all_of(readers[v].begin(), readers[v].end(), into_operands);
  }
  for (int o : plan.outputs) only[o] = false;
  return only;
}

// The row-wise nodes (by plan index) in connected parts that hold a
// product: without one a part would copy more than it saves.
std::vector<bool> Region(const NeutralPlan& plan, const RowAnalysis& rows) {
  const size_t count = plan.nodes.size();
  std::vector<bool> region(count);
  std::vector<int> producer(plan.values.size(), -1);
  std::vector<size_t> parent(count);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (size_t n = 0; n < count; ++n) {
    const PlanNode& node = plan.nodes[n];
    if (!rows.RowWise(node)) continue;
    region[n] = true;
    for (int o : node.outputs) producer[o] = static_cast<int>(n);
    for (int i : node.inputs) {
      if (i >= 0 && producer[i] >= 0) parent[find(n)] = find(producer[i]);
    }
  }
  absl::flat_hash_set<size_t> with_product;
  for (size_t n = 0; n < count; ++n) {
    if (region[n] && IsProduct(plan.nodes[n])) with_product.insert(find(n));
  }
  for (size_t n = 0; n < count; ++n) {
    if (region[n] && !with_product.contains(find(n))) region[n] = false;
  }
  return region;
}

void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t v) {
  for (onnx::AttributeProto& a : *node.mutable_attribute()) {
    if (a.name() == name) {
      a.set_i(v);
      return;
    }
  }
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

// Appends the edits of the packed form to one graph.
class Rewriter {
 public:
  Rewriter(onnx::GraphProto* graph, const std::string& mask_name)
      : graph_(graph), editor_(graph), mask_name_(mask_name) {}

  // The packed name of token-row value `name`.
  const std::string& Packed(const std::string& name) {
    auto it = packed_.find(name);
    if (it == packed_.end()) {
      it = packed_.emplace(name, editor_.UniqueName(name + "__packed")).first;
    }
    return it->second;
  }
  // x [B, S, E] into Packed(x) [T', E].
  void Pack(const std::string& x, int64_t width) {
    const std::string rows = editor_.UniqueName(x + "__rows");
    Node("Reshape",
         {x, editor_.AddInt64Initializer("coalesce.rows", {-1, width})}, rows);
    Node("Gather", {rows, kPackIndexInput}, Packed(x), /*axis=*/0);
  }
  // Packed(v) [T', E] back into v [B, S, E] (rank 3) or [B * S, E]: padded
  // rows zero when `zeros`, else copies of a real row.
  void Unpack(const std::string& v, int64_t width, size_t rank, bool zeros) {
    const std::string flat =
        rank == 2 ? v : editor_.UniqueName(v + "__padded_rows");
    if (zeros) {
      const std::string with_zero = editor_.UniqueName(v + "__with_zero_row");
      Node("Concat", {Packed(v), ZeroRow(width)}, with_zero, /*axis=*/0);
      Node("Gather", {with_zero, kUnpackIndexInput}, flat, /*axis=*/0);
    } else {
      Node("Gather", {Packed(v), kSpreadIndexInput}, flat, /*axis=*/0);
    }
    if (rank != 2) Node("Reshape", {flat, TokenShape(width)}, v);
  }
  // A Reshape between token rows of one width, [B, S, E] and [B * S, E]:
  // both [T', E] packed, an Identity.
  static void ReplaceReshape(onnx::NodeProto& node) {
    node.set_op_type("Identity");
    node.clear_attribute();
    node.mutable_input()->DeleteSubrange(1, node.input_size() - 1);
  }
  // A Shape node of a packed [B, S, E] value: a Slice of [B, S, E].
  void ReplaceShape(onnx::NodeProto& node, int64_t width) {
    int64_t start = 0, end = std::numeric_limits<int64_t>::max();
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "start") start = a.i();
      if (a.name() == "end") end = a.i();
    }
    const std::string shape = TokenShape(width);
    node.set_op_type("Slice");
    node.clear_attribute();
    node.clear_input();
    node.add_input(shape);
    node.add_input(editor_.AddInt64Initializer("coalesce.start", {start}));
    node.add_input(editor_.AddInt64Initializer("coalesce.end", {end}));
  }
  // A rank-3 constant [1, 1, E] as [E], so that it broadcasts over [T', E].
  const std::string& RowConstant(const std::string& c) {
    auto it = row_constants_.find(c);
    if (it == row_constants_.end()) {
      const std::string row = editor_.UniqueName(c + "__row");
      Node("Reshape", {c, editor_.AddInt64Initializer("coalesce.row", {-1})},
           row);
      it = row_constants_.emplace(c, row).first;
    }
    return it->second;
  }
  void AddIndexInputs() {
    for (const char* name :
         {kPackIndexInput, kUnpackIndexInput, kSpreadIndexInput}) {
      onnx::ValueInfoProto* in = graph_->add_input();
      in->set_name(name);
      onnx::TypeProto::Tensor* t = in->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::INT64);
      t->mutable_shape()->add_dim()->set_dim_param(absl::StrCat(name, ".rows"));
    }
  }

 private:
  void Node(const char* op, std::vector<std::string> inputs,
            const std::string& output, int64_t axis = -2) {
    pending_.emplace_back();
    onnx::NodeProto& node = pending_.back();
    node.set_op_type(op);
    node.set_name(editor_.UniqueName(absl::StrCat("coalesce.packing.", op)));
    for (std::string& in : inputs) node.add_input(std::move(in));
    node.add_output(output);
    if (axis != -2) SetIntAttr(node, "axis", axis);
  }
  const std::string& ZeroRow(int64_t width) {
    auto it = zero_rows_.find(width);
    if (it == zero_rows_.end()) {
      const std::string name = editor_.AddFloatInitializer(
          "coalesce.zero_row", {1, width}, std::vector<float>(width, 0.0f));
      it = zero_rows_.emplace(width, name).first;
    }
    return it->second;
  }
  // [B, S, width]: the mask's shape and the width, computed while planning.
  const std::string& TokenShape(int64_t width) {
    if (mask_shape_.empty()) {
      mask_shape_ = editor_.UniqueName("coalesce.mask_shape");
      Node("Shape", {mask_name_}, mask_shape_);
    }
    auto it = token_shapes_.find(width);
    if (it == token_shapes_.end()) {
      const std::string name = editor_.UniqueName("coalesce.token_shape");
      Node(
          "Concat",
          {mask_shape_, editor_.AddInt64Initializer("coalesce.width", {width})},
          name, /*axis=*/0);
      it = token_shapes_.emplace(width, name).first;
    }
    return it->second;
  }

 public:
  // Appends the new nodes (after every edit of existing ones: adding
  // nodes may move them).
  void Flush() {
    for (onnx::NodeProto& node : pending_)
      *graph_->add_node() = std::move(node);
    pending_.clear();
  }

 private:
  onnx::GraphProto* graph_;
  GraphEditor editor_;
  const std::string mask_name_;
  std::vector<onnx::NodeProto> pending_;
  absl::flat_hash_map<std::string, std::string> packed_, row_constants_;
  std::map<int64_t, std::string> zero_rows_, token_shapes_;
  std::string mask_shape_;
};

}  // namespace

absl::StatusOr<TokenPacking> RewriteForTokenPacking(
    std::shared_ptr<const Model> padded, onnx::GraphProto* graph) {
  absl::StatusOr<Probes> probes = PlanProbes(padded);
  if (!probes.ok()) return probes.status();
  const NeutralPlan& plan = *probes->plan[0];
  const RowAnalysis rows(*probes, padded->opset_version());
  const std::vector<AttentionSite> sites = FindAttention(plan);
  absl::StatusOr<int> mask = MaskInput(plan, sites);
  if (!mask.ok()) return mask.status();
  const std::vector<bool> spread = OnlyAttentionReads(plan, sites);
  const std::vector<bool> region = Region(plan, rows);
  TokenPacking info;
  info.mask_input = *mask;

  // What is packed, what enters and what leaves, by value id.
  const std::vector<std::string>& names = *plan.value_names;
  const size_t count = plan.values.size();
  std::vector<bool> packed(count), enters(count), leaves(count);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    if (!region[n]) continue;
    ++info.region_nodes;
    for (int o : plan.nodes[n].outputs) packed[o] = true;
  }
  if (info.region_nodes == 0) {
    return Refuse("no dense layer computes token rows");
  }
  absl::flat_hash_set<std::string> shape_readers;  // their first outputs
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const PlanNode& node = plan.nodes[n];
    for (int i : node.inputs) {
      if (i < 0) continue;
      if (region[n] && rows.TokenRows(i) && !packed[i]) enters[i] = true;
      if (region[n] || !packed[i]) continue;
      if (*node.op_type == "Shape" && IsDefaultDomain(node)) {
        if (rows.Rank(i) != 3) {
          return Refuse(absl::StrCat("the shape of token rows '", names[i],
                                     "' ([batch * seq, E]) is read"));
        }
        shape_readers.insert(names[node.outputs[0]]);
      } else {
        leaves[i] = true;
      }
    }
  }
  for (int o : plan.outputs) {
    if (packed[o]) leaves[o] = true;
  }

  // The edits: existing nodes first, then the new ones appended.
  absl::flat_hash_map<std::string, int> region_by_output;
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    if (region[n]) region_by_output[names[plan.nodes[n].outputs[0]]] = n;
  }
  absl::flat_hash_map<std::string, int> id_of;
  for (size_t id = 0; id < count; ++id) id_of[names[id]] = id;
  Rewriter rewriter(graph, names[plan.inputs[*mask]]);
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (node.output_size() == 0) continue;
    if (shape_readers.contains(node.output(0))) {
      rewriter.ReplaceShape(node, rows.Width(id_of.at(node.input(0))));
      continue;
    }
    if (!region_by_output.contains(node.output(0))) continue;
    if (node.op_type() == "Reshape") Rewriter::ReplaceReshape(node);
    for (std::string& out : *node.mutable_output()) {
      if (!out.empty()) out = rewriter.Packed(out);
    }
    for (std::string& in : *node.mutable_input()) {
      if (in.empty()) continue;
      const int id = id_of.at(in);
      if (packed[id] || enters[id]) {
        in = rewriter.Packed(in);
      } else if (rows.RowConstant(id) &&
                 plan.values[id].info.shape.size() == 3) {
        in = rewriter.RowConstant(in);
      }
    }
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.name() == "axis" && a.i() == 2) a.set_i(-1);
    }
  }
  for (size_t id = 0; id < count; ++id) {
    if (enters[id]) {
      rewriter.Pack(names[id], rows.Width(id));
      ++info.packs;
    }
    if (leaves[id]) {
      rewriter.Unpack(names[id], rows.Width(id), rows.Rank(id),
                      /*zeros=*/!spread[id]);
      ++info.unpacks;
    }
  }
  rewriter.Flush();
  rewriter.AddIndexInputs();
  return info;
}

}  // namespace coalesce
