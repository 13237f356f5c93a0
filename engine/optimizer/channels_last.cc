// Channels-last layout (graph_optimizer.h, pass 8): 2-D convolutions run on
// NHWC activations, which oneDNN's convolutions on AVX-512 read and write
// natively, instead of reordering NCHW in and out around every Conv.
//
// Each Conv/FusedConv with 4-D constant weights (grouped ones too) becomes
//   x -> Transpose(0,2,3,1) -> FusedConv(channels_last=1) -> Transpose(0,3,1,2)
// so every value keeps its name and meaning and the layout change is explicit
// in the graph. Then the transposes move downstream through operators that do
// not care about the layout (elementwise functions, elementwise arithmetic
// of equally transposed operands, Concat with its axis remapped) and a
// transpose followed by its inverse cancels. Between two convolutions of a
// ResNet only NHWC values remain; transposes stay where a layout-bound
// operator (LRN, Reshape, Gemm) reads a convolution's result, and at the
// graph's edges. Transposes nothing reads are removed.
//
// Pooling (2-D MaxPool without Indices, AveragePool, and the global ones,
// including a ReduceMean/ReduceMax over the two spatial axes, which is
// rewritten to the global pool) and inference BatchNormalization run on
// NHWC values too (channels_last=1 on the node; ops/pool.cc,
// ops/batch_norm.cc), and so does arithmetic with a per-channel constant
// (rewritten to [C]).
//
// ShuffleNet's channel shuffle (Reshape to [n, g, c, h, w], Transpose
// (0,2,1,3,4), Reshape to [n, g*c, h, w], constant shapes) between two
// convolutions is rewritten to shuffle NHWC values ([n, h, w, g, c],
// (0,1,2,4,3), [n, h, w, g*c]), so the transposes pass it too.
//
// A residual input Z (residual_fusion.cc) is transposed with X. The pass
// cannot see shapes, so it takes only a Z it can tell is 4-D from the
// operators producing it (IsFourD); ResNet's and ShuffleNet's residuals
// are.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

using Perm = std::vector<int64_t>;

const Perm kToNhwc = {0, 2, 3, 1};
const Perm kToNchw = {0, 3, 1, 2};

bool IsOp(const onnx::NodeProto& node, const char* op) {
  return IsDefaultDomain(node) && node.op_type() == op;
}

// The perm of a Transpose node with one input and one output, or empty for
// any other node (or a Transpose without an explicit perm).
Perm PermOf(const onnx::NodeProto* node) {
  if (node == nullptr || !IsOp(*node, "Transpose") || node->input_size() != 1 ||
      node->output_size() != 1)
    return {};
  const onnx::AttributeProto* perm = FindAttr(*node, "perm");
  if (perm == nullptr) return {};
  return Perm(perm->ints().begin(), perm->ints().end());
}

// Elementwise functions of one tensor (Clip's other inputs are scalars):
// the layout does not matter to them.
bool IsElementwiseUnary(const std::string& op) {
  return op == "Relu" || op == "LeakyRelu" || op == "Sigmoid" || op == "Tanh" ||
         op == "Clip" || op == "HardSwish" || op == "HardSigmoid";
}

bool IsElementwiseBinary(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

bool IsInverse(const Perm& first, const Perm& second) {
  if (first.size() != second.size()) return false;
  for (size_t j = 0; j < second.size(); ++j) {
    if (second[j] < 0 || second[j] >= static_cast<int64_t>(first.size()) ||
        first[second[j]] != static_cast<int64_t>(j))
      return false;
  }
  return true;
}

onnx::NodeProto MakeTranspose(const std::string& in, const std::string& out,
                              const Perm& perm) {
  onnx::NodeProto node;
  node.set_op_type("Transpose");
  node.set_name(out + "_transpose");
  node.add_input(in);
  node.add_output(out);
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name("perm");
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : perm) attr->add_ints(p);
  return node;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(GraphEditor& editor)
      : editor_(editor), graph_(editor.graph()) {}

  void Run() {
    WrapConvolutions();
    // Each round moves transposes downstream or removes them; a graph of n
    // nodes needs at most about n rounds.
    for (int round = 0; round <= graph_.node_size() && Sink(); ++round) {
    }
    RevertIsolated();
    RemoveUnreadTransposes();  // they would count as a second reader
    for (onnx::NodeProto& node : *graph_.mutable_node())
      if (IsOp(node, "BatchNormalization")) FoldIntoBatchNorm(node);
    editor_.Commit();
  }

 private:
  // A 2-D convolution the pass may wrap: `nchw_only` also refuses one
  // wrapped already. Grouped and depthwise ones too: oneDNN runs them on
  // NHWC here (brdgmm_dw, brgconv_1x1) and on NCHW by gemm, up to 17x
  // slower (docs/engine.md).
  bool IsConv2D(const onnx::NodeProto* node, bool nchw_only = true) const {
    if (node == nullptr) return false;
    const bool conv =
        IsOp(*node, "Conv") || (node->domain() == OpRegistry::kInternalDomain &&
                                node->op_type() == "FusedConv");
    if (!conv || node->input_size() < 2 || node->output_size() != 1 ||
        (nchw_only && FindAttr(*node, "channels_last") != nullptr))
      return false;
    const onnx::TensorProto* w = editor_.Initializer(node->input(1));
    if (w == nullptr || w->dims_size() != 4) return false;
    return !HasResidual(*node) || IsFourD(node->input(3), /*depth=*/8);
  }

  // Whether `value` is surely 4-D, from the operators that produce it:
  // a graph input declared 4-D, a 2-D convolution or pooling, a transpose of 4
  // axes, or an operator that keeps the rank of such a value (elementwise
  // functions, BatchNormalization, Concat). Looks `depth` producers up at most.
  bool IsFourD(const std::string& value, int depth) const {
    const onnx::NodeProto* p = editor_.Producer(value);
    if (p == nullptr) return IsFourDInput(value);
    if (depth == 0 || p->input_size() == 0) return false;
    if (IsConv2D(p, /*nchw_only=*/false) || PermOf(p).size() == 4) return true;
    if (IsOp(*p, "MaxPool") || IsOp(*p, "AveragePool")) {
      const onnx::AttributeProto* k = FindAttr(*p, "kernel_shape");
      return k != nullptr && k->ints_size() == 2;
    }
    if (IsOp(*p, "Concat")) {
      for (const std::string& in : p->input())
        if (IsFourD(in, depth - 1)) return true;
      return false;
    }
    // Arithmetic of two 4-D values is 4-D (SiLU's and squeeze-excitation's
    // Mul, a residual Add).
    if (IsElementwiseBinary(p->op_type()) && IsDefaultDomain(*p) &&
        p->input_size() == 2) {
      return IsFourD(p->input(0), depth - 1) && IsFourD(p->input(1), depth - 1);
    }
    const bool keeps_rank =
        (IsDefaultDomain(*p) && IsElementwiseUnary(p->op_type())) ||
        IsOp(*p, "BatchNormalization");
    return keeps_rank && IsFourD(p->input(0), depth - 1);
  }

  // A graph input declared with four dims.
  bool IsFourDInput(const std::string& value) const {
    for (const onnx::ValueInfoProto& in : graph_.input()) {
      if (in.name() == value)
        return in.type().tensor_type().has_shape() &&
               in.type().tensor_type().shape().dim_size() == 4;
    }
    return false;
  }

  static bool HasResidual(const onnx::NodeProto& node) {
    return node.input_size() > 3 && !node.input(3).empty();
  }

  void WrapConvolutions();
  // One pass over the nodes; true when it changed the graph.
  bool Sink();
  // Moves the transposes in front of `node` behind it; false when `node`
  // does not allow it.
  bool SinkThrough(onnx::NodeProto& node);
  // Transpose `node` reads a transpose it inverts: its readers read the
  // first one's input instead.
  bool Cancel(onnx::NodeProto& node);
  // Reshape `node` starts a channel shuffle reading a transpose to NCHW:
  // the shuffle now runs on NHWC values, and the transpose follows it.
  bool SinkThroughShuffle(onnx::NodeProto& node);
  // A layout-aware node (TakesChannelsLast) reading a transpose to NCHW
  // reads the NHWC values instead (channels_last=1), and the transpose
  // follows it.
  bool SinkThroughPool(onnx::NodeProto& node);
  // A ReduceMean or ReduceMax over the two spatial axes (kept) of a
  // transpose to NCHW becomes GlobalAveragePool or GlobalMaxPool, which
  // SinkThroughPool then makes channels-last: the dynamo exporter writes
  // adaptive_avg_pool2d(1) (ResNet's, squeeze-excitation's) as such a
  // ReduceMean. True when it rewrote `node`.
  bool AsGlobalPool(onnx::NodeProto& node);
  // 2-D or global pooling, or an inference BatchNormalization, not yet
  // channels-last: the operators with a channels_last attribute.
  static bool TakesChannelsLast(const onnx::NodeProto& node);
  // A channels-last BatchNormalization absorbs the Mul and Add by [C] (or
  // scalar) constants after it, into its scale and bias, and then a Relu
  // (as its fused activation): DenseNet's pre-activation becomes one pass.
  // Marks what it absorbs for removal.
  void FoldIntoBatchNorm(onnx::NodeProto& bn);
  // The NHWC form of a constant that broadcasts per channel against an
  // NCHW value ([C, 1, 1] or [1, C, 1, 1]: [C]; a scalar as it is), or
  // empty when `name` is not such a constant.
  std::string PerChannelConstant(const std::string& name);
  // A convolution still between a transpose in and a transpose out shares
  // NHWC with nothing: two transposes would replace the two reorders oneDNN
  // makes (or none, where it picks NCHW), so it goes back to NCHW.
  void RevertIsolated();
  void RemoveUnreadTransposes();
  void Append(onnx::NodeProto node) { *graph_.add_node() = std::move(node); }

  GraphEditor& editor_;
  onnx::GraphProto& graph_;
};

void ChannelsLast::WrapConvolutions() {
  std::vector<onnx::NodeProto*> convs;
  for (onnx::NodeProto& node : *graph_.mutable_node())
    if (IsConv2D(&node)) convs.push_back(&node);
  std::vector<onnx::NodeProto> added;
  absl::flat_hash_map<std::string, std::string> nhwc;  // one Transpose per x
  auto to_nhwc = [&](const std::string& x) {
    auto [it, first_reader] = nhwc.try_emplace(x);
    if (first_reader) {
      it->second = editor_.UniqueName(x + "_nhwc");
      added.push_back(MakeTranspose(x, it->second, kToNhwc));
    }
    return it->second;
  };
  for (onnx::NodeProto* conv : convs) {
    const std::string y = conv->output(0);
    const std::string y_nhwc = editor_.UniqueName(y + "_nhwc");
    conv->set_op_type("FusedConv");
    conv->set_domain(OpRegistry::kInternalDomain);
    conv->set_input(0, to_nhwc(conv->input(0)));
    if (HasResidual(*conv)) conv->set_input(3, to_nhwc(conv->input(3)));
    conv->set_output(0, y_nhwc);
    onnx::AttributeProto* attr = conv->add_attribute();
    attr->set_name("channels_last");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(1);
    added.push_back(MakeTranspose(y_nhwc, y, kToNchw));
  }
  for (onnx::NodeProto& node : added) Append(std::move(node));
  editor_.Refresh();
}

bool ChannelsLast::Sink() {
  bool changed = false;
  // Appending may reallocate the node list: iterate over the nodes present
  // when the round starts, by index.
  const int count = graph_.node_size();
  for (int i = 0; i < count; ++i) {
    onnx::NodeProto& node = *graph_.mutable_node(i);
    if (Cancel(node) || SinkThrough(node) || SinkThroughShuffle(node) ||
        (AsGlobalPool(node) | SinkThroughPool(node))) {
      changed = true;
      editor_.Refresh();
    }
  }
  return changed;
}

bool ChannelsLast::Cancel(onnx::NodeProto& node) {
  const Perm second = PermOf(&node);
  if (second.empty() || node.input_size() != 1) return false;
  const onnx::NodeProto* first = editor_.Producer(node.input(0));
  if (!IsInverse(PermOf(first), second)) return false;
  const std::string source = first->input(0);
  const std::string result = node.output(0);
  if (editor_.IsGraphOutput(result)) {  // the output keeps its name
    node.set_op_type("Identity");
    node.clear_attribute();
    node.set_input(0, source);
    return true;
  }
  for (onnx::NodeProto& reader : *graph_.mutable_node()) {
    for (std::string& in : *reader.mutable_input())
      if (in == result) in = source;
  }
  node.clear_input();  // unread now; RemoveUnreadTransposes drops it
  node.add_input(source);
  return true;
}

bool ChannelsLast::SinkThrough(onnx::NodeProto& node) {
  if (!IsDefaultDomain(node) || node.output_size() != 1 ||
      node.input_size() < 1)
    return false;
  const std::string& op = node.op_type();
  const bool unary = IsElementwiseUnary(op);
  const bool binary =
      IsElementwiseBinary(op) || op == "Sum" || op == "Max" || op == "Min";
  const bool concat = op == "Concat";
  if (!unary && !binary && !concat) return false;
  // Unary: input 0 (Clip's bounds are scalars). Otherwise every input, all
  // transposed alike, so the operator sees the same elements in each.
  int transposed = unary ? 1 : node.input_size();
  const Perm perm = PermOf(editor_.Producer(node.input(0)));
  if (perm.size() != 4) return false;
  // Arithmetic of an NHWC value and a per-channel constant (DenseNet's
  // pre-activation scale and shift): the constant is rewritten to [C].
  if (binary && node.input_size() == 2 && perm == kToNchw &&
      PermOf(editor_.Producer(node.input(1))).empty()) {
    const std::string constant = PerChannelConstant(node.input(1));
    if (constant.empty()) return false;
    node.set_input(1, constant);
    transposed = 1;
  }
  for (int i = 1; i < transposed; ++i) {
    if (PermOf(editor_.Producer(node.input(i))) != perm) return false;
  }
  if (concat) {
    const onnx::AttributeProto* axis = FindAttr(node, "axis");
    if (axis == nullptr || axis->i() < -4 || axis->i() > 3) return false;
    const int64_t k = axis->i() < 0 ? axis->i() + 4 : axis->i();
    // Concat along output axis k of T(a) is T of Concat along a's perm[k].
    for (onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.name() == "axis") a.set_i(perm[k]);
  }
  for (int i = 0; i < transposed; ++i)
    node.set_input(i, editor_.Producer(node.input(i))->input(0));
  const std::string result = node.output(0);
  const std::string inner = editor_.UniqueName(result + "_untransposed");
  node.set_output(0, inner);
  Append(MakeTranspose(inner, result, perm));
  return true;
}

bool ChannelsLast::SinkThroughShuffle(onnx::NodeProto& split) {
  if (!IsOp(split, "Reshape") || split.input_size() != 2 ||
      PermOf(editor_.Producer(split.input(0))) != kToNchw)
    return false;
  onnx::NodeProto* swap = editor_.SoleConsumer(split.output(0));
  if (swap == nullptr || PermOf(swap) != Perm{0, 2, 1, 3, 4}) return false;
  onnx::NodeProto* merge = editor_.SoleConsumer(swap->output(0));
  if (merge == nullptr || !IsOp(*merge, "Reshape") ||
      merge->input_size() != 2 || merge->input(0) != swap->output(0))
    return false;
  const auto five = editor_.Int64Values(split.input(1));
  const auto four = editor_.Int64Values(merge->input(1));
  if (!five || !four || five->size() != 5 || four->size() != 4) return false;
  // The batch entry may be 0 (copy) or -1 (infer): dim 0 is the batch in
  // either layout. The others must be given.
  for (size_t i = 1; i < 5; ++i)
    if ((*five)[i] <= 0) return false;
  const int64_t n = (*five)[0], g = (*five)[1], c = (*five)[2], h = (*five)[3],
                w = (*five)[4];
  if (n < -1) return false;
  // The merged batch entry is the same, or 0 / -1, which both give n.
  const int64_t m = (*four)[0];
  if (m != n && m != 0 && m != -1) return false;
  if (*four != std::vector<int64_t>{m, g * c, h, w}) return false;
  split.set_input(0, editor_.Producer(split.input(0))->input(0));
  split.set_input(1, editor_.AddInt64Initializer(split.input(1) + "_nhwc",
                                                 {n, h, w, g, c}));
  for (onnx::AttributeProto& a : *swap->mutable_attribute()) {
    if (a.name() != "perm") continue;
    a.clear_ints();
    for (int64_t p : {0, 1, 2, 4, 3}) a.add_ints(p);
  }
  merge->set_input(1, editor_.AddInt64Initializer(merge->input(1) + "_nhwc",
                                                  {m, h, w, g * c}));
  const std::string result = merge->output(0);
  const std::string inner = editor_.UniqueName(result + "_nhwc");
  merge->set_output(0, inner);
  Append(MakeTranspose(inner, result, kToNchw));
  return true;
}

void ChannelsLast::FoldIntoBatchNorm(onnx::NodeProto& bn) {
  const onnx::AttributeProto* layout = FindAttr(bn, "channels_last");
  if (layout == nullptr || layout->i() != 1 || bn.input_size() != 5 ||
      bn.output_size() != 1 || FindAttr(bn, "activation") != nullptr)
    return;
  std::optional<std::vector<float>> scale = editor_.FloatValues(bn.input(1));
  std::optional<std::vector<float>> bias = editor_.FloatValues(bn.input(2));
  if (!scale || !bias || scale->size() != bias->size()) return;
  const size_t channels = scale->size();
  bool changed = false;
  while (onnx::NodeProto* next = editor_.SoleConsumer(bn.output(0))) {
    if (IsOp(*next, "Relu") && next->input_size() == 1) {
      SetStringAttr(bn, "activation", "Relu");
      bn.set_output(0, next->output(0));
      editor_.Remove(next);
      break;  // nothing folds after the activation
    }
    const bool mul = IsOp(*next, "Mul"), add = IsOp(*next, "Add");
    if ((!mul && !add) || next->input_size() != 2) break;
    const int side = next->input(0) == bn.output(0) ? 1 : 0;
    Shape dims;
    std::optional<std::vector<float>> k =
        editor_.FloatValues(next->input(side), &dims);
    const bool per_channel = k && dims == Shape{static_cast<int64_t>(channels)};
    if (!k || (k->size() != 1 && !per_channel)) break;
    for (size_t c = 0; c < channels; ++c) {
      const float v = (*k)[k->size() == 1 ? 0 : c];
      if (mul) (*scale)[c] *= v, (*bias)[c] *= v;
      if (add) (*bias)[c] += v;
    }
    bn.set_output(0, next->output(0));
    editor_.Remove(next);
    changed = true;
  }
  if (!changed) return;
  const Shape c_dims = {static_cast<int64_t>(channels)};
  bn.set_input(
      1, editor_.AddFloatInitializer(bn.input(1) + "_folded", c_dims, *scale));
  bn.set_input(
      2, editor_.AddFloatInitializer(bn.input(2) + "_folded", c_dims, *bias));
}

std::string ChannelsLast::PerChannelConstant(const std::string& name) {
  Shape dims;
  const std::optional<std::vector<float>> v = editor_.FloatValues(name, &dims);
  if (!v || dims.size() > 4) return "";
  if (v->size() == 1) return name;     // broadcasts the same in any layout
  const size_t pad = 4 - dims.size();  // right-aligned against N, C, H, W
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool channel_axis = i + pad == 1;
    if (channel_axis ? dims[i] != static_cast<int64_t>(v->size())
                     : dims[i] != 1)
      return "";
  }
  return editor_.AddFloatInitializer(name + "_nhwc",
                                     {static_cast<int64_t>(v->size())}, *v);
}

bool ChannelsLast::TakesChannelsLast(const onnx::NodeProto& node) {
  if (node.output_size() != 1 || FindAttr(node, "channels_last") != nullptr)
    return false;
  if (IsOp(node, "BatchNormalization")) return node.input_size() == 5;
  if (node.input_size() != 1) return false;
  if (IsOp(node, "GlobalAveragePool") || IsOp(node, "GlobalMaxPool"))
    return true;
  if (!IsOp(node, "AveragePool") && !IsOp(node, "MaxPool")) return false;
  const onnx::AttributeProto* kernel = FindAttr(node, "kernel_shape");
  return kernel != nullptr && kernel->ints_size() == 2;
}

bool ChannelsLast::AsGlobalPool(onnx::NodeProto& node) {
  const bool mean = IsOp(node, "ReduceMean");
  if ((!mean && !IsOp(node, "ReduceMax")) || node.output_size() != 1 ||
      node.input_size() < 1 ||
      PermOf(editor_.Producer(node.input(0))) != kToNchw)
    return false;
  const onnx::AttributeProto* keep = FindAttr(node, "keepdims");
  if (keep != nullptr && keep->i() == 0) return false;
  std::vector<int64_t> axes;
  if (const onnx::AttributeProto* a = FindAttr(node, "axes")) {
    axes.assign(a->ints().begin(), a->ints().end());
  } else if (node.input_size() > 1 && !node.input(1).empty()) {
    auto given = editor_.Int64Values(node.input(1));  // from opset 18
    if (!given) return false;
    axes = *given;
  }
  for (int64_t& axis : axes)
    if (axis < 0) axis += 4;
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3}) return false;
  node.set_op_type(mean ? "GlobalAveragePool" : "GlobalMaxPool");
  node.clear_attribute();
  node.mutable_input()->DeleteSubrange(1, node.input_size() - 1);
  return true;
}

bool ChannelsLast::SinkThroughPool(onnx::NodeProto& pool) {
  if (!TakesChannelsLast(pool)) return false;
  const onnx::NodeProto* in = editor_.Producer(pool.input(0));
  if (PermOf(in) != kToNchw) return false;
  pool.set_input(0, in->input(0));
  onnx::AttributeProto* attr = pool.add_attribute();
  attr->set_name("channels_last");
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(1);
  const std::string result = pool.output(0);
  const std::string inner = editor_.UniqueName(result + "_nhwc");
  pool.set_output(0, inner);
  Append(MakeTranspose(inner, result, kToNchw));
  return true;
}

void ChannelsLast::RevertIsolated() {
  for (onnx::NodeProto& conv : *graph_.mutable_node()) {
    if (FindAttr(conv, "channels_last") == nullptr) continue;
    const onnx::NodeProto* in = editor_.Producer(conv.input(0));
    onnx::NodeProto* out = editor_.SoleConsumer(conv.output(0));
    if (PermOf(in) != kToNhwc || out == nullptr || PermOf(out) != kToNchw)
      continue;
    const onnx::NodeProto* z =
        HasResidual(conv) ? editor_.Producer(conv.input(3)) : nullptr;
    if (HasResidual(conv) && PermOf(z) != kToNhwc) continue;  // Z is NHWC
    if (z != nullptr) conv.set_input(3, z->input(0));
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> kept;
    for (const onnx::AttributeProto& a : conv.attribute())
      if (a.name() != "channels_last") *kept.Add() = a;
    conv.mutable_attribute()->Swap(&kept);
    conv.set_input(0, in->input(0));
    conv.set_output(0, out->output(0));
    out->set_output(0, editor_.UniqueName(out->output(0) + "_unread"));
  }
  editor_.Refresh();
}

void ChannelsLast::RemoveUnreadTransposes() {
  bool removed = true;
  while (removed) {
    removed = false;
    for (onnx::NodeProto& node : *graph_.mutable_node()) {
      if (!IsOp(node, "Transpose") || node.output_size() != 1 ||
          editor_.UseCount(node.output(0)) > 0)
        continue;
      editor_.Remove(&node);
      removed = true;
    }
    editor_.Commit();
  }
}

}  // namespace

void UseChannelsLast(GraphEditor& editor) { ChannelsLast(editor).Run(); }

}  // namespace coalesce
