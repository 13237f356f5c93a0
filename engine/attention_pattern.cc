#include "engine/attention_pattern.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "engine/schema/op_schema.h"

namespace coalesce {
namespace {

// One axis of a view as mixed-radix factors, outermost first: index i of
// the axis is split into digits over the factors' sizes, each digit times
// its factor's stride. Reshapes regroup factors, so merging two axes that
// are not adjacent in memory (the dynamo exporter's [B, H, S, D] ->
// [B*H, S, D] after a transpose) and splitting them back both stay views.
struct Factor {
  int64_t size = 1;
  int64_t stride = 0;
};
using Axis = std::vector<Factor>;
using View = std::vector<Axis>;

View Contiguous(const Shape& dims) {
  View view(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] != 1) view[d].push_back({dims[d], stride});
    stride *= dims[d];
  }
  return view;
}

// The view read in row-major order as `dims`; nullopt when a new axis
// would cut a factor at a size that does not divide it.
std::optional<View> Reshape(const View& view, const Shape& dims) {
  std::deque<Factor> factors;
  for (const Axis& axis : view)
    for (const Factor& f : axis)
      if (f.size != 1) factors.push_back(f);
  View out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t need = dims[d];
    while (need > 1) {
      if (factors.empty()) return std::nullopt;
      Factor& f = factors.front();
      if (need % f.size == 0) {
        out[d].push_back(f);
        need /= f.size;
        factors.pop_front();
      } else if (f.size % need == 0) {
        f.size /= need;
        out[d].push_back({need, f.stride * f.size});
        need = 1;
      } else {
        return std::nullopt;
      }
    }
  }
  if (!factors.empty()) return std::nullopt;
  return out;
}

// One stride for the axis, when its factors are one run in memory (an
// axis of size 1 has any stride: 0).
std::optional<int64_t> SingleStride(const Axis& axis) {
  if (axis.empty()) return 0;
  for (size_t i = 0; i + 1 < axis.size(); ++i)
    if (axis[i].stride != axis[i + 1].stride * axis[i + 1].size)
      return std::nullopt;
  return axis.back().stride;
}

// What q, k and v may share at their start, absorbed only when the three
// are all of its readers: a Split's outputs (key: the Split node), or
// Gathers of one value at constant indices (key: plan node count + that
// value) with the moves that made the value from a float one.
struct Shared {
  int64_t key = -1;  // -1: none
  std::vector<int> nodes;
  int row_view = -1;  // AttentionSite::row_views's Transpose, or -1
};

class Matcher {
 public:
  explicit Matcher(const NeutralPlan& plan) : plan_(plan) {
    producer_.assign(plan.values.size(), -1);
    uses_.assign(plan.values.size(), 0);
    consumers_.resize(plan.values.size());
    for (size_t n = 0; n < plan.nodes.size(); ++n) {
      const PlanNode& node = plan.nodes[n];
      if (node.folded) continue;
      for (int v : node.outputs)
        if (v >= 0) producer_[v] = static_cast<int>(n);
      for (int v : node.inputs) {
        if (v < 0) continue;
        ++uses_[v];
        consumers_[v].push_back(static_cast<int>(n));
      }
    }
    for (int v : plan.outputs) ++uses_[v];
  }

  std::optional<AttentionSite> MatchSoftmax(int softmax);

 private:
  // A move: its output is its input 0's elements, re-indexed.
  bool IsMove(const PlanNode& node) const {
    static const char* const kMoves[] = {"Reshape",   "Transpose", "Squeeze",
                                         "Unsqueeze", "Flatten",   "Identity"};
    if (!node.domain->empty()) return false;
    return std::any_of(std::begin(kMoves), std::end(kMoves),
                       [&](const char* op) { return *node.op_type == op; });
  }
  bool Is(const PlanNode& node, const char* op) const {
    return node.domain->empty() && *node.op_type == op;
  }
  const Shape& DimsOf(int value) const {
    return plan_.values[value].info.shape;
  }
  bool IsFloat(int value) const {
    return plan_.values[value].info.dtype == DataType::kFp32;
  }
  // The node writing `value` when it has exactly one use (by a node) and is
  // not a model output: only then can the pattern absorb that node.
  bool IsModelOutput(int value) const {
    return std::find(plan_.outputs.begin(), plan_.outputs.end(), value) !=
           plan_.outputs.end();
  }
  int SoleProducer(int value) const {
    if (value < 0 || uses_[value] != 1 || IsModelOutput(value)) return -1;
    return producer_[value];
  }
  std::optional<float> ScalarConstant(int value) const;
  std::optional<float> ScalarFactor(const PlanNode& node, int* operand) const;
  std::optional<View> Apply(const View& view, const PlanNode& node,
                            bool inverse) const;
  std::optional<View> SplitView(int split, int output, int64_t* offset) const;
  std::optional<int64_t> ScalarIndex(int value) const;
  std::optional<View> GatherView(int gather, int64_t* offset, Shared* shared,
                                 int* source) const;
  bool IsRowWiseDense(const PlanNode& node) const;
  bool KeepsLastAxis(const PlanNode& transpose) const;
  std::optional<View> RowOrderView(int value, int* transpose) const;
  std::optional<View> RowOrderTarget(int value, int* transpose) const;
  std::optional<AttentionOperand> ReadOperand(int value, bool transposed,
                                              bool through_shared, float* scale,
                                              std::vector<int>* nodes,
                                              Shared* shared) const;
  size_t Readers(const Shared& shared) const;
  bool ReadOperands(const PlanNode& qk, const PlanNode& pv, bool through_shared,
                    AttentionSite* site, std::vector<int>* nodes) const;
  std::optional<AttentionOperand> MaskOperand(int mask,
                                              const Shape& scores) const;
  bool WriteOperand(int product, AttentionOperand* out, std::vector<int>* nodes,
                    int* row_view) const;

  const NeutralPlan& plan_;
  std::vector<int> producer_;
  std::vector<int> uses_;
  std::vector<std::vector<int>> consumers_;
};

std::optional<float> Matcher::ScalarConstant(int value) const {
  const TensorInfo& info = plan_.values[value].info;
  if (info.constant_data == nullptr || info.dtype != DataType::kFp32)
    return std::nullopt;
  for (int64_t d : info.shape)
    if (d != 1) return std::nullopt;
  float f;
  std::memcpy(&f, info.constant_data, sizeof f);
  return f;
}

// For Mul(x, c), Mul(c, x) and Div(x, c) with c a float scalar constant:
// the factor, and in *operand the input x.
std::optional<float> Matcher::ScalarFactor(const PlanNode& node,
                                           int* operand) const {
  if (node.inputs.size() != 2) return std::nullopt;
  if (Is(node, "Mul")) {
    for (int i = 0; i < 2; ++i) {
      if (std::optional<float> c = ScalarConstant(node.inputs[1 - i])) {
        *operand = node.inputs[i];
        return c;
      }
    }
  } else if (Is(node, "Div")) {
    std::optional<float> c = ScalarConstant(node.inputs[1]);
    if (c && *c != 0.0f) {
      *operand = node.inputs[0];
      return 1.0f / *c;
    }
  }
  return std::nullopt;
}

// The view after `node` (a move or a scalar factor), or before it when
// `inverse`: the input's view from its output's.
std::optional<View> Matcher::Apply(const View& view, const PlanNode& node,
                                   bool inverse) const {
  if (!Is(node, "Transpose")) {
    if (!IsMove(node)) return view;  // a scalar factor moves nothing
    return Reshape(view, DimsOf(inverse ? node.inputs[0] : node.outputs[0]));
  }
  const size_t rank = DimsOf(node.inputs[0]).size();
  std::vector<int64_t> perm;
  if (node.attributes != nullptr) {
    absl::StatusOr<std::vector<int64_t>> p = node.attributes->GetInts("perm");
    if (!p.ok()) return std::nullopt;
    perm = *std::move(p);
  }
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != rank || view.size() != rank) return std::nullopt;
  View out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(rank))
      return std::nullopt;
    if (inverse) {
      out[perm[d]] = view[d];
    } else {
      out[d] = view[perm[d]];
    }
  }
  return out;
}

// Output `output` of Split node `split` as a view of the Split's input:
// the split axis keeps its stride and takes the output's size, and *offset
// is where the output starts. nullopt when that input is not float.
std::optional<View> Matcher::SplitView(int split, int output,
                                       int64_t* offset) const {
  const PlanNode& node = plan_.nodes[split];
  const int input = node.inputs[0];
  if (!IsFloat(input)) return std::nullopt;
  const Shape& dims = DimsOf(input);
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = 0;
  if (node.attributes != nullptr) {
    absl::StatusOr<int64_t> a = node.attributes->GetInt("axis", 0);
    if (!a.ok()) return std::nullopt;
    axis = *a < 0 ? *a + rank : *a;
  }
  if (axis < 0 || axis >= rank) return std::nullopt;
  int64_t stride = 1;
  for (int64_t d = axis + 1; d < rank; ++d) stride *= dims[d];
  int64_t start = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const int out = node.outputs[i];
    if (out == plan_.nodes[split].outputs[output]) break;
    if (out >= 0) start += DimsOf(out)[axis];
  }
  Shape chunk = dims;
  chunk[axis] = DimsOf(node.outputs[output])[axis];
  View view = Contiguous(chunk);
  // Contiguous(chunk) strides the axes after `axis` right, and those before
  // it as if the input were chunk-sized: restore the input's strides.
  View full = Contiguous(dims);
  for (int64_t d = 0; d < axis; ++d) view[d] = full[d];
  *offset = start * stride;
  return view;
}

// A constant integer scalar (a Gather's index), else nullopt.
std::optional<int64_t> Matcher::ScalarIndex(int value) const {
  const TensorInfo& info = plan_.values[value].info;
  if (info.constant_data == nullptr || !info.shape.empty()) return std::nullopt;
  if (info.dtype == DataType::kInt64) {
    int64_t i;
    std::memcpy(&i, info.constant_data, sizeof i);
    return i;
  }
  if (info.dtype == DataType::kInt32) {
    int32_t i;
    std::memcpy(&i, info.constant_data, sizeof i);
    return i;
  }
  return std::nullopt;
}

// Gather node `gather` of one entry (a scalar constant index) along an
// axis of its data Y, where Y is made from a float value by moves (each
// value between them read once): the Gather's output as a view of that
// value, which goes to *source; *offset is where the entry starts.
// nn.MultiheadAttention's exports take q, k and v so from one packed
// projection ([S, B, 3, E] -> [3, S, B, E], then entries 0, 1 and 2).
std::optional<View> Matcher::GatherView(int gather, int64_t* offset,
                                        Shared* shared, int* source) const {
  const PlanNode& node = plan_.nodes[gather];
  if (node.inputs.size() != 2) return std::nullopt;
  const int data = node.inputs[0];
  const std::optional<int64_t> index = ScalarIndex(node.inputs[1]);
  const int64_t rank = static_cast<int64_t>(DimsOf(data).size());
  int64_t axis = 0;
  if (node.attributes != nullptr) {
    absl::StatusOr<int64_t> a = node.attributes->GetInt("axis", 0);
    if (!a.ok()) return std::nullopt;
    axis = *a < 0 ? *a + rank : *a;
  }
  if (!index || axis < 0 || axis >= rank) return std::nullopt;
  const int64_t size = DimsOf(data)[axis];
  const int64_t entry = *index < 0 ? *index + size : *index;
  if (entry < 0 || entry >= size) return std::nullopt;
  if (IsModelOutput(data)) return std::nullopt;
  // Back from Y over its moves to the value they start from.
  std::vector<int> stem;
  int from = data;
  for (int n = producer_[data]; n >= 0 && IsMove(plan_.nodes[n]);
       n = SoleProducer(from)) {
    stem.push_back(n);
    from = plan_.nodes[n].inputs[0];
  }
  if (!IsFloat(from)) return std::nullopt;
  // Y's view of `from` as it lies, or of the rows of the dense layer that
  // made it in their order before a Transpose (RowOrderView), if that one
  // is a strided view too.
  auto through_stem = [&](std::optional<View> view) -> std::optional<View> {
    for (auto n = stem.rbegin(); n != stem.rend() && view; ++n)
      view = Apply(*view, plan_.nodes[*n], /*inverse=*/false);
    if (!view || static_cast<int64_t>(view->size()) != rank ||
        !SingleStride((*view)[axis]))
      return std::nullopt;
    return view;
  };
  int row_view = -1;
  std::optional<View> view;
  if (std::optional<View> rows = RowOrderView(from, &row_view))
    view = through_stem(std::move(rows));
  if (!view) {
    row_view = -1;
    view = through_stem(Contiguous(DimsOf(from)));
  }
  if (!view) return std::nullopt;
  const std::optional<int64_t> stride = SingleStride((*view)[axis]);
  view->erase(view->begin() + axis);
  *offset = entry * *stride;
  *source = from;
  shared->key = static_cast<int64_t>(plan_.nodes.size()) + data;
  shared->nodes = stem;
  shared->nodes.push_back(gather);
  shared->row_view = row_view;
  return view;
}

// A dense layer that computes each row of its input 0 on its own: MatMul,
// or FusedMatMul without a residual, by a 2-D float constant; or Gemm /
// FusedGemm without transA, by a 2-D constant, its C (if any) a constant
// repeated over the rows.
bool Matcher::IsRowWiseDense(const PlanNode& d) const {
  const bool internal = *d.domain == SchemaRegistry::kInternalDomain;
  const bool matmul =
      (Is(d, "MatMul") && d.inputs.size() == 2) ||
      (internal && *d.op_type == "FusedMatMul" && d.inputs.size() <= 3);
  const bool gemm = Is(d, "Gemm") || (internal && *d.op_type == "FusedGemm");
  if ((!matmul && !gemm) || d.outputs.size() != 1 || d.inputs.size() < 2 ||
      d.inputs[0] < 0 || d.inputs[1] < 0 || !IsFloat(d.inputs[0]) ||
      plan_.values[d.inputs[1]].info.constant_data == nullptr ||
      DimsOf(d.inputs[1]).size() != 2)
    return false;
  if (!gemm) return true;
  if (d.attributes != nullptr) {
    absl::StatusOr<int64_t> trans_a = d.attributes->GetInt("transA", 0);
    if (!trans_a.ok() || *trans_a != 0) return false;
  }
  if (d.inputs.size() < 3 || d.inputs[2] < 0) return true;
  const TensorInfo& c = plan_.values[d.inputs[2]].info;
  return c.constant_data != nullptr &&
         (c.shape.size() <= 1 || (c.shape.size() == 2 && c.shape[0] == 1));
}

// A Transpose whose perm keeps the last axis last (rows stay rows).
bool Matcher::KeepsLastAxis(const PlanNode& transpose) const {
  if (transpose.attributes == nullptr) return false;
  absl::StatusOr<std::vector<int64_t>> perm =
      transpose.attributes->GetInts("perm");
  return perm.ok() && perm->size() >= 2 &&
         perm->back() == static_cast<int64_t>(perm->size()) - 1;
}

// When `value` is a dense layer's result (IsRowWiseDense) read only by the
// site, whose input a Transpose that keeps the last axis made and only
// that layer reads: `value` as it is when that Transpose is a view of its
// input (the layer then computes the same rows in the input's order), and
// the Transpose in *transpose. nn.MultiheadAttention's exports transpose
// [B, S, E] to [S, B, E] before the packed in-projection. Else nullopt.
std::optional<View> Matcher::RowOrderView(int value, int* transpose) const {
  const int dense = SoleProducer(value);
  if (dense < 0) return std::nullopt;
  const PlanNode& d = plan_.nodes[dense];
  if (!IsRowWiseDense(d)) return std::nullopt;
  const int t = SoleProducer(d.inputs[0]);
  if (t < 0 || !Is(plan_.nodes[t], "Transpose") ||
      !KeepsLastAxis(plan_.nodes[t]) || !IsFloat(plan_.nodes[t].inputs[0]))
    return std::nullopt;
  const PlanNode& node = plan_.nodes[t];
  Shape rows = DimsOf(node.inputs[0]);
  const Shape& dims = DimsOf(value);
  if (rows.size() != dims.size() || rows.size() < 2) return std::nullopt;
  rows.back() = dims.back();
  // The Transpose keeps the last axis, so the view's last axis is the rows'
  // own (stride 1) and its other axes are `value`'s.
  std::optional<View> view = Apply(Contiguous(rows), node, /*inverse=*/false);
  if (!view) return std::nullopt;
  *transpose = t;
  return view;
}

// How a product reads `value` (its operand), walking back over moves and
// scalar factors to the value they start from, and then, when
// `through_shared`, over a Split or a Gather of a packed projection (what
// it would absorb goes to *shared; else its key is -1).
// `transposed`: the operand is [.., cols, rows] (K before the first
// product). Adds the walked moves and factors to *nodes, the factors to
// *scale.
std::optional<AttentionOperand> Matcher::ReadOperand(int value, bool transposed,
                                                     bool through_shared,
                                                     float* scale,
                                                     std::vector<int>* nodes,
                                                     Shared* shared) const {
  std::vector<int> walked;
  int source = value;
  for (int n = SoleProducer(source); n >= 0; n = SoleProducer(source)) {
    const PlanNode& node = plan_.nodes[n];
    int next = -1;
    if (IsMove(node)) {
      next = node.inputs[0];
    } else if (!ScalarFactor(node, &next)) {
      break;
    }
    walked.push_back(n);
    source = next;
  }
  *shared = Shared{};
  int64_t offset = 0;
  std::optional<View> start;
  const int producer = through_shared ? SoleProducer(source) : -1;
  if (producer >= 0 && Is(plan_.nodes[producer], "Split")) {
    const std::vector<int>& outs = plan_.nodes[producer].outputs;
    const int output = static_cast<int>(
        std::find(outs.begin(), outs.end(), source) - outs.begin());
    start = SplitView(producer, output, &offset);
    if (start) {
      *shared = Shared{producer, {producer}};
      source = plan_.nodes[producer].inputs[0];
    }
  } else if (producer >= 0 && Is(plan_.nodes[producer], "Gather")) {
    start = GatherView(producer, &offset, shared, &source);
    if (!start) *shared = Shared{};
  }
  if (!start) {
    if (!IsFloat(source)) return std::nullopt;
    start = Contiguous(DimsOf(source));
  }
  View view = *std::move(start);
  for (auto n = walked.rbegin(); n != walked.rend(); ++n) {
    const PlanNode& node = plan_.nodes[*n];
    int unused;
    if (std::optional<float> f = ScalarFactor(node, &unused)) *scale *= *f;
    std::optional<View> next = Apply(view, node, /*inverse=*/false);
    if (!next) return std::nullopt;
    view = *std::move(next);
  }
  const size_t rank = view.size();
  if (rank != 3 && rank != 4) return std::nullopt;
  std::array<int64_t, 4> strides = {0, 0, 0, 0};
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> s = SingleStride(view[d]);
    if (!s) return std::nullopt;
    strides[d + 4 - rank] = *s;
  }
  if (rank == 3) std::swap(strides[0], strides[1]);  // [batch, 1 head, ..]
  if (transposed) std::swap(strides[2], strides[3]);
  const int64_t cols =
      DimsOf(value)[DimsOf(value).size() - (transposed ? 2 : 1)];
  if (strides[3] != 1 && cols != 1) return std::nullopt;
  strides[3] = 1;
  nodes->insert(nodes->end(), walked.begin(), walked.end());
  return AttentionOperand{source, strides, offset};
}

// How many readers a Shared start has: a Split's outputs, or the Gathered
// value's consumers (when it is read by nodes only).
size_t Matcher::Readers(const Shared& shared) const {
  const int64_t nodes = static_cast<int64_t>(plan_.nodes.size());
  if (shared.key < nodes) return plan_.nodes[shared.key].outputs.size();
  const int64_t value = shared.key - nodes;
  if (static_cast<size_t>(uses_[value]) != consumers_[value].size()) return 0;
  return consumers_[value].size();
}

// When what a site writes, `value`, is read only by a dense layer
// (IsRowWiseDense) whose result reaches a Transpose that keeps the last
// axis through moves (each value read once): `value` as stored when that
// Transpose and the moves before it are views, so that the site writes
// the rows in the order the Transpose gives them and the dense layer keeps
// it (nn.MultiheadAttention's head merge: [S * B, E] into the
// out-projection, then [S, B, E] transposed to [B, S, E]); the Transpose
// in *transpose. Else nullopt.
std::optional<View> Matcher::RowOrderTarget(int value, int* transpose) const {
  if (SoleProducer(value) < 0 || consumers_[value].size() != 1)
    return std::nullopt;
  const PlanNode& d = plan_.nodes[consumers_[value].front()];
  if (!IsRowWiseDense(d) || d.inputs[0] != value) return std::nullopt;
  std::vector<int> chain;  // moves after the dense layer, to the Transpose
  int v = d.outputs[0];
  while (chain.empty() || !Is(plan_.nodes[chain.back()], "Transpose")) {
    if (chain.size() == 8 || SoleProducer(v) < 0 || consumers_[v].size() != 1)
      return std::nullopt;
    const int n = consumers_[v].front();
    if (!IsMove(plan_.nodes[n]) || plan_.nodes[n].inputs[0] != v)
      return std::nullopt;
    chain.push_back(n);
    v = plan_.nodes[n].outputs[0];
  }
  if (!KeepsLastAxis(plan_.nodes[chain.back()]) || IsModelOutput(v))
    return std::nullopt;  // a model output is no view
  // The dense layer's result as the Transpose's output lies contiguous.
  std::optional<View> view = Contiguous(DimsOf(v));
  for (size_t i = chain.size(); i-- > 0 && view;)
    view = Apply(*view, plan_.nodes[chain[i]], /*inverse=*/true);
  const Shape& y = DimsOf(d.outputs[0]);
  const Shape& x = DimsOf(value);
  if (!view || view->size() != y.size() || x.size() != y.size() ||
      !std::equal(x.begin(), x.end() - 1, y.begin()))
    return std::nullopt;
  const int64_t n = y.back(), k = x.back();
  if (n <= 1 || k <= 1 || view->back().size() != 1 ||
      view->back()[0].stride != 1 || view->back()[0].size != n)
    return std::nullopt;
  // The same rows, k wide instead of n.
  for (size_t a = 0; a + 1 < view->size(); ++a) {
    for (Factor& f : (*view)[a]) {
      if (f.stride % n != 0) return std::nullopt;
      f.stride = f.stride / n * k;
    }
  }
  view->back() = {Factor{k, 1}};
  *transpose = chain.back();
  return view;
}

// Reads q, k and v of the products `qk` and `pv` into *site. With
// `through_shared`, a Split or a packed projection's Gathers they start
// from are absorbed only when the three are all of its readers; false when
// that fails.
bool Matcher::ReadOperands(const PlanNode& qk, const PlanNode& pv,
                           bool through_shared, AttentionSite* site,
                           std::vector<int>* nodes) const {
  Shared shared[3];
  float v_scale = 1.0f;
  std::optional<AttentionOperand> q = ReadOperand(
      qk.inputs[0], false, through_shared, &site->scale, nodes, &shared[0]);
  std::optional<AttentionOperand> k = ReadOperand(
      qk.inputs[1], true, through_shared, &site->scale, nodes, &shared[1]);
  std::optional<AttentionOperand> v = ReadOperand(
      pv.inputs[1], false, through_shared, &v_scale, nodes, &shared[2]);
  if (!q || !k || !v || v_scale != 1.0f) return false;
  std::vector<int> absorbed, row_views;
  for (const Shared& s : shared) {
    if (s.key < 0) continue;
    const auto readers =
        std::count_if(std::begin(shared), std::end(shared),
                      [&](const Shared& other) { return other.key == s.key; });
    if (static_cast<size_t>(readers) != Readers(s)) return false;
    for (int n : s.nodes)
      if (std::find(absorbed.begin(), absorbed.end(), n) == absorbed.end())
        absorbed.push_back(n);
    if (s.row_view >= 0 && std::find(row_views.begin(), row_views.end(),
                                     s.row_view) == row_views.end())
      row_views.push_back(s.row_view);
  }
  nodes->insert(nodes->end(), absorbed.begin(), absorbed.end());
  site->row_views = std::move(row_views);
  site->q = *q;
  site->k = *k;
  site->v = *v;
  return true;
}

// The mask's broadcast strides over the scores' [batch, heads, q, kv].
std::optional<AttentionOperand> Matcher::MaskOperand(
    int mask, const Shape& scores) const {
  const Shape& dims = DimsOf(mask);
  if (!IsFloat(mask) || dims.size() > scores.size()) return std::nullopt;
  std::array<int64_t, 4> strides = {0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i;    // mask axis
    const size_t s = scores.size() - 1 - i;  // scores axis
    const size_t a = 4 - scores.size() + s;  // attention axis
    if (dims[d] != 1 && dims[d] != scores[s]) return std::nullopt;
    if (dims[d] != 1) strides[a] = stride;
    stride *= dims[d];
  }
  if (scores.size() == 3) std::swap(strides[0], strides[1]);
  return AttentionOperand{mask, strides};
}

// Where the second product's result lands: following its moves while each
// value has one use, the last value of which the product's [.., rows,
// head_dim] is still a strided view. Adds the absorbed moves to *nodes.
bool Matcher::WriteOperand(int product, AttentionOperand* out,
                           std::vector<int>* nodes, int* row_view) const {
  std::vector<int> chain;  // moves after the product, in order
  for (int v = plan_.nodes[product].outputs[0];;) {
    if (SoleProducer(v) < 0 || consumers_[v].size() != 1) break;
    const PlanNode& next = plan_.nodes[consumers_[v].front()];
    if (!IsMove(next) || next.inputs[0] != v) break;
    chain.push_back(consumers_[v].front());
    v = next.outputs[0];
  }
  const int result = plan_.nodes[product].outputs[0];
  const size_t rank = DimsOf(result).size();
  // The product's result as a view of how `target` is stored.
  auto strides_into =
      [&](std::optional<View> view,
          size_t keep) -> std::optional<std::array<int64_t, 4>> {
    for (size_t i = keep; i-- > 0 && view;)
      view = Apply(*view, plan_.nodes[chain[i]], /*inverse=*/true);
    if (!view || view->size() != rank) return std::nullopt;
    std::array<int64_t, 4> strides = {0, 0, 0, 0};
    for (size_t d = 0; d < rank; ++d) {
      std::optional<int64_t> s = SingleStride((*view)[d]);
      if (!s) return std::nullopt;
      strides[d + 4 - rank] = *s;
    }
    if (rank == 3) std::swap(strides[0], strides[1]);
    if (strides[3] != 1 && DimsOf(result).back() != 1) return std::nullopt;
    strides[3] = 1;
    return strides;
  };
  for (size_t keep = chain.size() + 1; keep-- > 0;) {
    const int target =
        keep == 0 ? result : plan_.nodes[chain[keep - 1]].outputs[0];
    int transpose = -1;
    std::optional<std::array<int64_t, 4>> strides;
    if (std::optional<View> reordered = RowOrderTarget(target, &transpose))
      strides = strides_into(std::move(reordered), keep);
    if (strides) {
      *row_view = transpose;
    } else {
      strides = strides_into(Contiguous(DimsOf(target)), keep);
    }
    if (!strides) continue;
    *out = AttentionOperand{target, *strides};
    nodes->insert(nodes->end(), chain.begin(), chain.begin() + keep);
    return true;
  }
  return false;
}

std::optional<AttentionSite> Matcher::MatchSoftmax(int softmax) {
  const PlanNode& sm = plan_.nodes[softmax];
  const Shape& scores = DimsOf(sm.inputs[0]);
  if (scores.size() != 3 && scores.size() != 4) return std::nullopt;
  if (sm.attributes == nullptr) return std::nullopt;
  absl::StatusOr<int64_t> axis =
      sm.attributes->GetInt("axis", plan_.opset >= 13 ? -1 : 1);
  if (!axis.ok() ||
      (*axis != -1 && *axis != static_cast<int64_t>(scores.size()) - 1))
    return std::nullopt;
  AttentionSite site;
  std::vector<int> nodes = {softmax};
  // Back from the softmax: one mask Add, then scalar factors, then Q Kᵀ.
  int v = sm.inputs[0];
  int n = SoleProducer(v);
  if (n >= 0 && Is(plan_.nodes[n], "Add")) {
    const PlanNode& add = plan_.nodes[n];
    for (int i = 0; i < 2 && site.mask.value < 0; ++i) {
      const int m = SoleProducer(add.inputs[i]);
      if (m < 0 || DimsOf(add.inputs[i]) != scores) continue;
      int unused;
      const PlanNode& p = plan_.nodes[m];
      if (!Is(p, "MatMul") && !ScalarFactor(p, &unused)) continue;
      std::optional<AttentionOperand> mask =
          MaskOperand(add.inputs[1 - i], scores);
      if (!mask) return std::nullopt;
      site.mask = *mask;
      v = add.inputs[i];
    }
    if (site.mask.value < 0) return std::nullopt;
    nodes.push_back(n);
    n = SoleProducer(v);
  }
  while (n >= 0 && !Is(plan_.nodes[n], "MatMul")) {
    std::optional<float> f = ScalarFactor(plan_.nodes[n], &v);
    if (!f) return std::nullopt;
    site.scale *= *f;
    nodes.push_back(n);
    n = SoleProducer(v);
  }
  if (n < 0) return std::nullopt;
  const PlanNode& qk = plan_.nodes[n];
  nodes.push_back(n);
  // Forward from the softmax: the optional NaN guard, then P V.
  int p = sm.outputs[0];
  if (consumers_[p].size() == 2 && uses_[p] == 2) {
    const PlanNode* isnan = nullptr;
    const PlanNode* where = nullptr;
    for (int c : consumers_[p]) {
      if (Is(plan_.nodes[c], "IsNaN")) isnan = &plan_.nodes[c];
      if (Is(plan_.nodes[c], "Where")) where = &plan_.nodes[c];
    }
    if (isnan == nullptr || where == nullptr || where->inputs.size() != 3 ||
        where->inputs[0] != isnan->outputs[0] || where->inputs[2] != p ||
        SoleProducer(isnan->outputs[0]) < 0 ||
        ScalarConstant(where->inputs[1]) != 0.0f)
      return std::nullopt;
    nodes.push_back(static_cast<int>(isnan - plan_.nodes.data()));
    nodes.push_back(static_cast<int>(where - plan_.nodes.data()));
    site.zero_masked_rows = true;
    p = where->outputs[0];
  }
  if (SoleProducer(p) < 0 || consumers_[p].size() != 1) return std::nullopt;
  const int pv = consumers_[p].front();
  const PlanNode& pv_node = plan_.nodes[pv];
  if (!Is(pv_node, "MatMul") || pv_node.inputs[0] != p) return std::nullopt;
  nodes.push_back(pv);
  // Shapes: [.., q_len, d] x [.., d, kv_len], then [.., q_len, kv_len] x
  // [.., kv_len, d], with the same leading dims everywhere.
  const Shape& qd = DimsOf(qk.inputs[0]);
  const Shape& kd = DimsOf(qk.inputs[1]);
  const Shape& vd = DimsOf(pv_node.inputs[1]);
  const size_t r = scores.size();
  if (qd.size() != r || kd.size() != r || vd.size() != r) return std::nullopt;
  if (!std::equal(qd.begin(), qd.end() - 2, kd.begin()) ||
      !std::equal(qd.begin(), qd.end() - 2, vd.begin()) ||
      kd[r - 2] != qd[r - 1] || vd[r - 2] != kd[r - 1] ||
      vd[r - 1] != qd[r - 1])
    return std::nullopt;
  site.batch = qd[0];
  site.heads = r == 4 ? qd[1] : 1;
  site.q_len = qd[r - 2];
  site.kv_len = kd[r - 1];
  site.head_dim = qd[r - 1];
  const float scale = site.scale;
  const size_t before = nodes.size();
  if (!ReadOperands(qk, pv_node, /*through_shared=*/true, &site, &nodes)) {
    site.scale = scale;
    nodes.resize(before);
    if (!ReadOperands(qk, pv_node, /*through_shared=*/false, &site, &nodes))
      return std::nullopt;
  }
  int out_row_view = -1;
  if (!WriteOperand(pv, &site.out, &nodes, &out_row_view)) return std::nullopt;
  if (out_row_view >= 0) site.row_views.push_back(out_row_view);
  std::sort(nodes.begin(), nodes.end());
  if (std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end())
    return std::nullopt;
  site.nodes = std::move(nodes);
  return site;
}

}  // namespace

std::vector<AttentionSite> FindAttention(const NeutralPlan& plan) {
  Matcher matcher(plan);
  std::vector<AttentionSite> sites;
  std::vector<bool> taken(plan.nodes.size(), false);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const PlanNode& node = plan.nodes[n];
    if (node.folded || !node.domain->empty() || *node.op_type != "Softmax")
      continue;
    std::optional<AttentionSite> site =
        matcher.MatchSoftmax(static_cast<int>(n));
    if (!site) continue;
    // Sites share no node, and no Transpose is two sites' row view (one
    // could read the rows in the order the other wrote them out of).
    auto is_taken = [&](int i) { return taken[i]; };
    if (std::any_of(site->nodes.begin(), site->nodes.end(), is_taken) ||
        std::any_of(site->row_views.begin(), site->row_views.end(), is_taken))
      continue;
    for (int i : site->nodes) taken[i] = true;
    for (int i : site->row_views) taken[i] = true;
    sites.push_back(*std::move(site));
  }
  std::sort(sites.begin(), sites.end(),
            [](const AttentionSite& a, const AttentionSite& b) {
              return a.nodes.back() < b.nodes.back();
            });
  return sites;
}

}  // namespace coalesce
