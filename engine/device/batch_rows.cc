#include "engine/device/batch_rows.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/schema/gemm_schema.h"
#include "engine/schema/normalization_schema.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/softmax_schema.h"
#include "engine/schema/tensor_schema.h"

namespace coalesce {
namespace {

bool IsOneOf(const std::string& op, std::initializer_list<const char*> ops) {
  for (const char* candidate : ops) {
    if (op == candidate) return true;
  }
  return false;
}

class RowAnalysis {
 public:
  explicit RowAnalysis(const NeutralPlan& plan)
      : plan_(plan), batched_(plan.values.size(), false) {}

  bool Run();

 private:
  // Whether row i of the node's outputs depends only on row i of its batched
  // inputs. REQUIRES: the node reads at least one batched value.
  bool KeepsRows(const PlanNode& node) const;
  bool OnlyFirstBatched(const PlanNode& node) const;
  bool Broadcasts(const PlanNode& node) const;
  bool ConvLike(const PlanNode& node) const;
  bool GemmRows(const PlanNode& node) const;
  bool MatMulRows(const PlanNode& node) const;
  bool GatherRows(const PlanNode& node) const;
  bool TransposeRows(const PlanNode& node) const;
  // The node's "axis" attribute (or `fallback`), against input 0's rank, is
  // not the batch axis.
  // True when the resolved attributes' axis (null: none resolved) comes
  // after the batch axis.
  template <typename Attrs>
  bool AxisAfterBatch(const PlanNode& node, const Attrs* attrs) const {
    if (attrs == nullptr) return false;
    const int64_t normalized =
        attrs->axis < 0 ? attrs->axis + Rank(node.inputs[0]) : attrs->axis;
    return normalized >= 1;
  }

  int64_t Rank(int id) const {
    return static_cast<int64_t>(plan_.values[id].info.shape.size());
  }
  int64_t Dim0(int id) const {
    const Shape& shape = plan_.values[id].info.shape;
    return shape.empty() ? -1 : shape[0];
  }
  bool Batched(int id) const { return id >= 0 && batched_[id]; }
  // An unbatched operand broadcast across the batch: a lower rank, or a
  // leading 1.
  bool BroadcastOver(int id, int64_t rank) const {
    return !Batched(id) && (Rank(id) < rank || Dim0(id) == 1);
  }

  const NeutralPlan& plan_;
  std::vector<bool> batched_;
  int64_t batch_ = 0;
};

bool RowAnalysis::Run() {
  if (plan_.inputs.empty() || plan_.outputs.empty()) return false;
  batch_ = Dim0(plan_.inputs[0]);
  if (batch_ < 2) return false;
  for (int id : plan_.inputs) {
    if (Dim0(id) != batch_) return false;
    batched_[id] = true;
  }
  for (const PlanNode& node : plan_.nodes) {
    if (node.folded) continue;
    bool reads_batched = false;
    for (int id : node.inputs) reads_batched = reads_batched || Batched(id);
    if (!reads_batched) continue;
    if (!KeepsRows(node)) return false;
    for (int id : node.outputs) {
      if (id < 0) continue;
      if (Dim0(id) != batch_) return false;
      batched_[id] = true;
    }
  }
  for (int id : plan_.outputs) {
    if (!Batched(id)) return false;
  }
  return true;
}

bool RowAnalysis::KeepsRows(const PlanNode& node) const {
  const std::string& op = *node.op_type;
  if (IsOneOf(op, {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "Gelu",
                   "Erf", "Sqrt", "Exp", "Identity", "Dropout", "Cast",
                   "Reshape", "Flatten", "Squeeze", "Unsqueeze"})) {
    return OnlyFirstBatched(node);  // views: Run checks that dim 0 stays
  }
  if (IsOneOf(op, {"Add", "Sub", "Mul", "Div", "Sum", "Pow"}))
    return Broadcasts(node);
  if (IsOneOf(op, {"Conv", "FusedConv", "MaxPool", "AveragePool",
                   "GlobalAveragePool", "GlobalMaxPool", "LRN",
                   "BatchNormalization"})) {
    return ConvLike(node);
  }
  if (op == "Gemm" || op == "FusedGemm") return GemmRows(node);
  if (op == "MatMul" || op == "FusedMatMul") return MatMulRows(node);
  if (op == "Softmax") {
    return OnlyFirstBatched(node) &&
           AxisAfterBatch(node, ResolvedAs<SoftmaxAttrs>(node.resolved));
  }
  if (op == "LayerNormalization")
    return OnlyFirstBatched(node) &&
           AxisAfterBatch(node, ResolvedAs<LayerNormAttrs>(node.resolved));
  if (op == "Concat") {
    for (int id : node.inputs) {
      if (!Batched(id)) return false;
    }
    return AxisAfterBatch(node, ResolvedAs<ConcatAttrs>(node.resolved));
  }
  if (op == "Transpose") return TransposeRows(node);
  if (op == "Gather") return GatherRows(node);
  return false;
}

bool RowAnalysis::OnlyFirstBatched(const PlanNode& node) const {
  if (node.inputs.empty() || !Batched(node.inputs[0])) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (Batched(node.inputs[i])) return false;
  }
  return true;
}

bool RowAnalysis::Broadcasts(const PlanNode& node) const {
  if (node.outputs.empty() || node.outputs[0] < 0) return false;
  const int64_t rank = Rank(node.outputs[0]);
  for (int id : node.inputs) {
    if (id < 0) continue;
    if (Batched(id) ? Rank(id) != rank : !BroadcastOver(id, rank)) return false;
  }
  return true;
}

// Input 0 is the batched image; weights and per-channel vectors are not.
// FusedConv's residual input, batched, has the output's shape.
bool RowAnalysis::ConvLike(const PlanNode& node) const {
  if (!Batched(node.inputs[0]) || node.outputs.empty()) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const int id = node.inputs[i];
    if (!Batched(id)) continue;
    if (*node.op_type != "FusedConv" ||
        plan_.values[id].info.shape !=
            plan_.values[node.outputs[0]].info.shape) {
      return false;
    }
  }
  return true;
}

// A [batch, k] times an unbatched B; C broadcast over the rows.
bool RowAnalysis::GemmRows(const PlanNode& node) const {
  const GemmAttrs* attrs = ResolvedAs<GemmAttrs>(node.resolved);
  if (attrs == nullptr || attrs->trans_a) return false;
  if (node.inputs.size() < 2 || !Batched(node.inputs[0]) ||
      Batched(node.inputs[1])) {
    return false;
  }
  return node.inputs.size() < 3 || node.inputs[2] < 0 ||
         BroadcastOver(node.inputs[2], 2);
}

// The batch in A's rows (rank 2) or in the stack of matrices (rank >= 3),
// on either side; the other side broadcast or stacked the same way.
bool RowAnalysis::MatMulRows(const PlanNode& node) const {
  if (node.inputs.size() != 2) return false;
  const int a = node.inputs[0];
  const int b = node.inputs[1];
  const int64_t ra = Rank(a);
  const int64_t rb = Rank(b);
  if (Batched(a) && Batched(b)) return ra == rb && ra >= 3;
  if (Batched(a)) return ra == 2 ? rb == 2 : BroadcastOver(b, ra);
  return rb >= 3 && BroadcastOver(a, rb);
}

// Rows of a batched table on another axis, or an unbatched table looked up
// by batched indices along axis 0.
bool RowAnalysis::GatherRows(const PlanNode& node) const {
  if (node.inputs.size() != 2) return false;
  const GatherAttrs* attrs = ResolvedAs<GatherAttrs>(node.resolved);
  if (attrs == nullptr) return false;
  const int data = node.inputs[0];
  const int64_t normalized =
      attrs->axis < 0 ? attrs->axis + Rank(data) : attrs->axis;
  if (Batched(data)) return !Batched(node.inputs[1]) && normalized >= 1;
  return normalized == 0;
}

bool RowAnalysis::TransposeRows(const PlanNode& node) const {
  if (!OnlyFirstBatched(node)) return false;
  const TransposeAttrs* attrs = ResolvedAs<TransposeAttrs>(node.resolved);
  if (attrs == nullptr) return false;
  const std::vector<int64_t> perm = TransposePerm(*attrs, Rank(node.inputs[0]));
  return !perm.empty() && perm[0] == 0;
}

}  // namespace

bool BatchRowsIndependent(const NeutralPlan& plan) {
  return RowAnalysis(plan).Run();
}

}  // namespace coalesce
