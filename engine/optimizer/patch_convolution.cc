// Patch convolutions as dense layers, for device programs. A 2-D Conv whose
// stride is its kernel, with no padding, dilation or groups (a vision
// transformer's patch embedding: 16x16 at stride 16 over the image's 3
// channels) reads every input pixel once, in non-overlapping patches: it is
// a dense layer over the patches. It becomes
//   Reshape x [N, C, H, W] to [N, C, H/kh, kh, W/kw, kw] (N copied: 0)
//   Transpose (0, 2, 4, 1, 3, 5) to [N, H/kh, W/kw, C, kh, kw]
//   Reshape to [N, P, C*kh*kw]            (P = H/kh * W/kw patches)
//   MatMul by W as [C*kh*kw, M], Add B    (FusedMatMul after pass 3)
//   Transpose (0, 2, 1) to [N, M, P], Reshape to y's [N, M, H/kh, W/kw]
// so the GPU runs one GEMM on tensor cores instead of cuDNN's kernels for a
// 3-channel NCHW convolution, which are not tensor-core kernels in FP16
// (a third of ViT-B/16's FP16 kernel time on the 2026-11-28 H200 run,
// BENCHMARKS.md). Only kernels of at least 2x2 over fewer than 8 input
// channels (an image's): a 1x1 convolution at stride 1 or a CNN's 2x2
// downsampling fits the same form but runs well, fused and NHWC, as a
// convolution. x's C, H and W must be known: declared on the graph
// input or value it is, or on the one a Cast or Identity chain starts from
// (CLIP casts its pixel values first).
#include <optional>
#include <string>
#include <vector>

#include "engine/optimizer/passes.h"

namespace coalesce {
namespace {

// The declared dims of `value` (-1 where symbolic), walking back through
// Casts and Identities; empty when none are declared.
std::vector<int64_t> DeclaredDims(GraphEditor& editor,
                                  const std::string& value) {
  std::string name = value;
  for (int hops = 0; hops < 8; ++hops) {
    auto dims_of = [&](const onnx::ValueInfoProto& vi) {
      std::vector<int64_t> dims;
      for (const auto& d : vi.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      return dims;
    };
    for (const onnx::ValueInfoProto& vi : editor.graph().input())
      if (vi.name() == name && vi.type().tensor_type().has_shape())
        return dims_of(vi);
    for (const onnx::ValueInfoProto& vi : editor.graph().value_info())
      if (vi.name() == name && vi.type().tensor_type().has_shape())
        return dims_of(vi);
    const onnx::NodeProto* producer = editor.Producer(name);
    if (producer == nullptr || !IsDefaultDomain(*producer) ||
        (producer->op_type() != "Cast" && producer->op_type() != "Identity") ||
        producer->input_size() < 1)
      return {};
    name = producer->input(0);
  }
  return {};
}

// The attribute's ints, or `otherwise` when absent.
std::vector<int64_t> Ints(const onnx::NodeProto& node, const std::string& name,
                          std::vector<int64_t> otherwise) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (a == nullptr) return otherwise;
  return {a->ints().begin(), a->ints().end()};
}

// Fewer input channels than this: tensor-core convolutions want 8 or more
// 16-bit channels.
constexpr int64_t kMaxPatchChannels = 8;

struct PatchConv {
  int64_t c, h, w, m, kh, kw;
};

// The geometry of `conv` when it is a patch convolution this pass rewrites.
std::optional<PatchConv> Match(GraphEditor& editor,
                               const onnx::NodeProto& conv) {
  if (conv.op_type() != "Conv" || !IsDefaultDomain(conv) ||
      conv.input_size() < 2 || conv.output_size() != 1)
    return std::nullopt;
  const onnx::TensorProto* w = editor.Initializer(conv.input(1));
  if (w == nullptr || w->dims_size() != 4) return std::nullopt;
  const onnx::AttributeProto* group = FindAttr(conv, "group");
  const onnx::AttributeProto* auto_pad = FindAttr(conv, "auto_pad");
  if ((group != nullptr && group->i() != 1) ||
      (auto_pad != nullptr && auto_pad->s() != "NOTSET" &&
       auto_pad->s() != "VALID"))
    return std::nullopt;
  PatchConv p{0, 0, 0, w->dims(0), w->dims(2), w->dims(3)};
  if (Ints(conv, "kernel_shape", {p.kh, p.kw}) !=
          std::vector<int64_t>{p.kh, p.kw} ||
      Ints(conv, "strides", {1, 1}) != std::vector<int64_t>{p.kh, p.kw} ||
      Ints(conv, "dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
      Ints(conv, "pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
    return std::nullopt;
  const std::vector<int64_t> x = DeclaredDims(editor, conv.input(0));
  if (x.size() != 4) return std::nullopt;
  p.c = x[1], p.h = x[2], p.w = x[3];
  if (p.c != w->dims(1) || p.h <= 0 || p.w <= 0 || p.h % p.kh != 0 ||
      p.w % p.kw != 0)
    return std::nullopt;
  // A 1x1 convolution at stride 1 is a patch convolution too, as is a CNN's
  // 2x2 downsampling at stride 2; both read many channels, where cuDNN's
  // tensor-core kernels (and NHWC with its fusions) serve them well. Only
  // the image's few channels keep cuDNN off the tensor cores.
  if (p.kh < 2 || p.kw < 2 || p.c >= kMaxPatchChannels) return std::nullopt;
  return p;
}

onnx::NodeProto MakeNode(const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::string& output, const std::string& name) {
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  for (const std::string& in : inputs) node.add_input(in);
  node.add_output(output);
  return node;
}

onnx::NodeProto MakeTranspose(const std::string& x, const std::string& y,
                              const std::vector<int64_t>& perm,
                              const std::string& name) {
  onnx::NodeProto node = MakeNode("Transpose", {x}, y, name);
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name("perm");
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t d : perm) attr->add_ints(d);
  return node;
}

// Appends the dense form of `conv` (geometry `p`), or nothing when its
// weights are not float values.
bool Rewrite(GraphEditor& editor, const onnx::NodeProto& conv,
             const PatchConv& p, std::vector<onnx::NodeProto>* added) {
  std::optional<std::vector<float>> w = editor.FloatValues(conv.input(1));
  const int64_t k = p.c * p.kh * p.kw;
  if (!w || static_cast<int64_t>(w->size()) != p.m * k) return false;
  std::optional<std::vector<float>> bias;
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    bias = editor.FloatValues(conv.input(2));
    if (!bias || static_cast<int64_t>(bias->size()) != p.m) return false;
  }
  std::vector<float> wt(w->size());  // [K, M]: W's rows as columns
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t i = 0; i < k; ++i) wt[i * p.m + m] = (*w)[m * k + i];
  const int64_t rows = p.h / p.kh, cols = p.w / p.kw;
  const std::string base = conv.name().empty() ? "patch_conv" : conv.name();
  auto value = [&](const std::string& what) {
    return editor.UniqueName(base + "_" + what);
  };
  const std::string split = value("split"), order = value("patch_major"),
                    patches = value("patches"), dense = value("dense");
  added->push_back(
      MakeNode("Reshape",
               {conv.input(0),
                editor.AddInt64Initializer(base + "_split_shape",
                                           {0, p.c, rows, p.kh, cols, p.kw})},
               split, split));
  added->push_back(MakeTranspose(split, order, {0, 2, 4, 1, 3, 5}, order));
  added->push_back(
      MakeNode("Reshape",
               {order, editor.AddInt64Initializer(base + "_patches_shape",
                                                  {0, rows * cols, k})},
               patches, patches));
  std::string product = dense;
  added->push_back(MakeNode(
      "MatMul",
      {patches, editor.AddFloatInitializer(base + "_weight_t", {k, p.m}, wt)},
      dense, dense));
  if (bias) {
    product = value("biased");
    added->push_back(MakeNode(
        "Add",
        {dense, editor.AddFloatInitializer(base + "_bias", {p.m}, *bias)},
        product, product));
  }
  const std::string channels = value("channels");
  added->push_back(MakeTranspose(product, channels, {0, 2, 1}, channels));
  added->push_back(MakeNode(
      "Reshape",
      {channels,
       editor.AddInt64Initializer(base + "_image_shape", {0, p.m, rows, cols})},
      conv.output(0), value("image")));
  return true;
}

}  // namespace

void LowerPatchConvolutions(GraphEditor& editor) {
  std::vector<onnx::NodeProto> added;
  for (onnx::NodeProto& conv : *editor.graph().mutable_node()) {
    const std::optional<PatchConv> p = Match(editor, conv);
    if (p && Rewrite(editor, conv, *p, &added)) editor.Remove(&conv);
  }
  if (added.empty()) return;
  for (onnx::NodeProto& node : added)
    *editor.graph().add_node() = std::move(node);
  editor.Commit();
}

}  // namespace coalesce
