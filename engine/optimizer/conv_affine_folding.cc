// Conv + channel affine folding. After a Conv whose weights and bias are
// constants and whose result feeds only this node, any of
//   BatchNormalization (inference), Mul by a per-channel constant,
//   Add of a per-channel constant
// is y = a[m] * conv + b[m], which folds into the Conv as W'[m] = a[m] W[m]
// and B'[m] = a[m] B[m] + b[m]. Repeats until no such node is left, so
// Conv -> BN -> Mul -> Add (DenseNet's pattern) becomes one Conv.
#include <cmath>
#include <string>
#include <vector>

#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

struct ChannelAffine {
  std::vector<float> scale, shift;  // per output channel
};

bool IsPlainConv(const onnx::NodeProto& node) {
  if (node.input_size() > 3) return false;  // a residual is not scaled
  if (node.op_type() == "Conv" && IsDefaultDomain(node)) return true;
  return node.op_type() == "FusedConv" &&
         node.domain() == OpRegistry::kInternalDomain &&
         FindAttr(node, "activation") == nullptr;
}

// A constant that broadcasts per channel against a [N, M, spatial...] result
// of rank `rank`: a scalar, or dims that are all 1 except dim 1 (== M) when
// left-padded to `rank`.
std::optional<std::vector<float>> PerChannel(const GraphEditor& editor,
                                             const std::string& name,
                                             size_t rank, int64_t channels) {
  Shape dims;
  std::optional<std::vector<float>> v = editor.FloatValues(name, &dims);
  if (!v) return std::nullopt;
  if (v->size() == 1) return std::vector<float>(channels, (*v)[0]);
  if (dims.size() > rank || static_cast<int64_t>(v->size()) != channels)
    return std::nullopt;
  const size_t pad = rank - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool channel_axis = i + pad == 1;
    if (dims[i] != (channel_axis ? channels : 1)) return std::nullopt;
  }
  return v;
}

std::optional<ChannelAffine> BatchNormAffine(const GraphEditor& editor,
                                             const onnx::NodeProto& bn,
                                             int64_t channels) {
  if (bn.input_size() != 5 || bn.output_size() != 1) return std::nullopt;
  const onnx::AttributeProto* training = FindAttr(bn, "training_mode");
  const onnx::AttributeProto* spatial = FindAttr(bn, "spatial");
  if ((training && training->i() != 0) || (spatial && spatial->i() != 1))
    return std::nullopt;
  const onnx::AttributeProto* eps_attr = FindAttr(bn, "epsilon");
  const float eps = eps_attr ? eps_attr->f() : 1e-5f;
  std::vector<std::vector<float>> p;
  for (int i = 1; i < 5; ++i) {
    std::optional<std::vector<float>> v = editor.FloatValues(bn.input(i));
    if (!v || static_cast<int64_t>(v->size()) != channels) return std::nullopt;
    p.push_back(*std::move(v));
  }
  ChannelAffine a{std::vector<float>(channels), std::vector<float>(channels)};
  for (int64_t m = 0; m < channels; ++m) {
    a.scale[m] = p[0][m] / std::sqrt(p[3][m] + eps);
    a.shift[m] = p[1][m] - p[2][m] * a.scale[m];
  }
  return a;
}

// The affine map `node` applies to `conv_out`, if it is one of the three.
std::optional<ChannelAffine> AffineOf(const GraphEditor& editor,
                                      const onnx::NodeProto& node,
                                      const std::string& conv_out, size_t rank,
                                      int64_t channels) {
  if (!IsDefaultDomain(node)) return std::nullopt;
  if (node.op_type() == "BatchNormalization")
    return node.input(0) == conv_out ? BatchNormAffine(editor, node, channels)
                                     : std::nullopt;
  if ((node.op_type() != "Mul" && node.op_type() != "Add") ||
      node.input_size() != 2)
    return std::nullopt;
  const std::string& other =
      node.input(0) == conv_out ? node.input(1) : node.input(0);
  std::optional<std::vector<float>> c =
      PerChannel(editor, other, rank, channels);
  if (!c) return std::nullopt;
  if (node.op_type() == "Mul")
    return ChannelAffine{*c, std::vector<float>(channels, 0.0f)};
  return ChannelAffine{std::vector<float>(channels, 1.0f), *c};
}

// Folds the consumer of `conv` into it; true if it did.
bool FoldOne(GraphEditor& editor, onnx::NodeProto& conv) {
  if (conv.input_size() < 2) return false;
  Shape w_dims;
  std::optional<std::vector<float>> w =
      editor.FloatValues(conv.input(1), &w_dims);
  if (!w || w_dims.size() < 3) return false;
  const int64_t channels = w_dims[0];
  std::vector<float> bias(channels, 0.0f);
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    std::optional<std::vector<float>> b = editor.FloatValues(conv.input(2));
    if (!b || static_cast<int64_t>(b->size()) != channels) return false;
    bias = *b;
  }
  onnx::NodeProto* next = editor.SoleConsumer(conv.output(0));
  if (next == nullptr) return false;
  std::optional<ChannelAffine> affine =
      AffineOf(editor, *next, conv.output(0), w_dims.size(), channels);
  if (!affine) return false;
  const size_t per_channel = w->size() / channels;
  for (int64_t m = 0; m < channels; ++m) {
    for (size_t i = 0; i < per_channel; ++i)
      (*w)[m * per_channel + i] *= affine->scale[m];
    bias[m] = bias[m] * affine->scale[m] + affine->shift[m];
  }
  conv.set_input(
      1, editor.AddFloatInitializer(conv.input(1) + "_folded", w_dims, *w));
  const std::string b_name = editor.AddFloatInitializer(
      conv.name() + "_bias_folded", {channels}, bias);
  if (conv.input_size() > 2) {
    conv.set_input(2, b_name);
  } else {
    conv.add_input(b_name);
  }
  conv.set_output(0, next->output(0));
  editor.Remove(next);
  return true;
}

}  // namespace

void FoldConvChannelAffine(GraphEditor& editor) {
  for (bool changed = true; changed;) {
    changed = false;
    for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
      if (!IsPlainConv(node)) continue;
      if (FoldOne(editor, node)) {
        changed = true;
        break;  // the maps are stale until Commit
      }
    }
    editor.Commit();
  }
}

}  // namespace coalesce
