#include "engine/device/testing/device_test_cases.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce::testing {
namespace {

using Configure = std::function<void(onnx::NodeProto&)>;

// A case of one node `op` on inputs x0..xn of the given shapes (-1: batch),
// output y.
DeviceTestCase OneNode(const std::string& name, const std::string& op,
                       const std::vector<Shape>& input_dims,
                       std::vector<std::vector<Shape>> runs,
                       float tolerance = 1e-6f, int64_t opset = 20,
                       const Configure& configure = nullptr) {
  OnnxModelBuilder b(opset);
  std::vector<std::string> inputs;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    inputs.push_back(absl::StrCat("x", i));
    b.Input(inputs.back(), input_dims[i]);
  }
  onnx::NodeProto& node = b.Node(op, inputs, {"y"}, name);
  if (configure) configure(node);
  b.Output("y");
  return {name, std::move(b), true, std::move(runs), tolerance};
}

void AddActivationCases(std::vector<DeviceTestCase>& cases) {
  const std::vector<std::vector<Shape>> runs = {{{3, 70}}, {{1, 70}}};
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Exp"}) {
    cases.push_back(OneNode(op, op, {{-1, 70}}, runs, 2e-6f));
  }
  for (float exponent : {2.0f, 3.0f}) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 70});
    b.FloatInitializer("e", {}, {exponent});
    b.Node("Pow", {"x", "e"}, {"y"});
    b.Output("y");
    cases.push_back({absl::StrCat("pow", static_cast<int>(exponent)),
                     std::move(b), true, runs, 2e-6f});
  }
  {
    OnnxModelBuilder b(13);  // Sqrt of a square: a non-negative input
    b.Input("x", {-1, 70});
    b.Node("Mul", {"x", "x"}, {"sq"});
    b.Node("Sqrt", {"sq"}, {"y"});
    b.Output("y");
    cases.push_back({"sqrt", std::move(b), true, runs, 2e-6f});
  }
  cases.push_back(
      OneNode("leaky_relu", "LeakyRelu", {{-1, 70}}, runs, 1e-6f, 20,
              [](onnx::NodeProto& n) { SetFloatAttr(n, "alpha", 0.3f); }));
  cases.push_back(OneNode("gelu_erf", "Gelu", {{-1, 70}}, runs, 2e-6f));
  cases.push_back(OneNode(
      "gelu_tanh", "Gelu", {{-1, 70}}, runs, 2e-6f, 20,
      [](onnx::NodeProto& n) { SetStringAttr(n, "approximate", "tanh"); }));
  cases.push_back(OneNode("clip_attrs", "Clip", {{-1, 70}}, runs, 0.0f, 6,
                          [](onnx::NodeProto& n) {
                            SetFloatAttr(n, "min", -0.5f);
                            SetFloatAttr(n, "max", 1.25f);
                          }));
  OnnxModelBuilder b(13);
  b.Input("x", {-1, 70});
  b.FloatInitializer("lo", {}, {-0.75f});
  b.FloatInitializer("hi", {}, {0.5f});
  b.Node("Clip", {"x", "lo", "hi"}, {"y"});
  b.Output("y");
  cases.push_back({"clip_inputs", std::move(b), true, runs, 0.0f});
}

void AddBinaryCases(std::vector<DeviceTestCase>& cases) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    cases.push_back(OneNode(absl::StrCat(op, "_same"), op,
                            {{-1, 3, 5}, {-1, 3, 5}}, {{{2, 3, 5}, {2, 3, 5}}},
                            1e-6f));
    cases.push_back(OneNode(absl::StrCat(op, "_broadcast"), op,
                            {{-1, 3, 1}, {5}},
                            {{{4, 3, 1}, {5}}, {{1, 3, 1}, {5}}}, 1e-6f));
  }
  cases.push_back(OneNode("Add_rank_up", "Add", {{2, 1, 4, 1}, {3, 1, 6}},
                          {{{2, 1, 4, 1}, {3, 1, 6}}}, 0.0f));
}

// Gemm with each attribute and C form; weights are model constants as
// exporters write them.
void AddGemmCases(std::vector<DeviceTestCase>& cases) {
  struct Variant {
    const char* name;
    bool trans_a, trans_b;
    float alpha, beta;
    Shape c;  // empty: no C
  };
  const Variant variants[] = {
      {"gemm_plain", false, false, 1.0f, 1.0f, {}},
      {"gemm_transb_bias", false, true, 1.0f, 1.0f, {24}},
      {"gemm_transa_alpha", true, false, 0.5f, 1.0f, {1, 24}},
      {"gemm_full_c", false, true, -2.0f, 1.0f, {-1, 24}},
      {"gemm_column_c", false, false, 1.0f, 1.0f, {-1, 1}},
      {"gemm_beta0", false, false, 1.0f, 0.0f, {24}},
  };
  for (const Variant& v : variants) {
    OnnxModelBuilder b(13);
    b.Input("a", v.trans_a ? Shape{40, -1} : Shape{-1, 40});
    const Shape w = v.trans_b ? Shape{24, 40} : Shape{40, 24};
    b.FloatInitializer("w", w, RandomFloats(40 * 24, 11));
    std::vector<std::string> in = {"a", "w"};
    if (!v.c.empty()) {
      in.push_back("c");
      b.Input("c", v.c);
    }
    auto& n = b.Node("Gemm", in, {"y"});
    SetIntAttr(n, "transA", v.trans_a);
    SetIntAttr(n, "transB", v.trans_b);
    SetFloatAttr(n, "alpha", v.alpha);
    SetFloatAttr(n, "beta", v.beta);
    b.Output("y");
    std::vector<std::vector<Shape>> runs;
    for (int64_t m : {1, 7, 33}) {
      std::vector<Shape> shapes = {v.trans_a ? Shape{40, m} : Shape{m, 40}};
      if (!v.c.empty()) {
        Shape c = v.c;
        for (int64_t& d : c) d = d < 0 ? m : d;
        shapes.push_back(c);
      }
      runs.push_back(shapes);
    }
    cases.push_back({v.name, std::move(b), true, runs, 1e-5f});
  }
  // Gemm -> Relu, fused by the optimizer into FusedGemm (bias + Relu
  // epilogue), and Gemm -> Sigmoid (an activation the GEMM cannot fuse).
  for (const char* act : {"Relu", "Sigmoid"}) {
    OnnxModelBuilder b(13);
    b.Input("a", {-1, 64});
    b.FloatInitializer("w", {32, 64}, RandomFloats(64 * 32, 12));
    b.FloatInitializer("bias", {32}, RandomFloats(32, 13));
    SetIntAttr(b.Node("Gemm", {"a", "w", "bias"}, {"g"}), "transB", 1);
    b.Node(act, {"g"}, {"y"});
    b.Output("y");
    cases.push_back({absl::StrCat("gemm_bias_", act),
                     std::move(b),
                     true,
                     {{{5, 64}}, {{128, 64}}},
                     1e-5f});
  }
}

// y = x * 0.5 * (1 + Erf(x / sqrt 2)), GELU as exporters write it (its
// constants and intermediates named after y).
void AddErfGelu(OnnxModelBuilder& b, const std::string& x,
                const std::string& y) {
  b.FloatInitializer(y + "_sqrt2", {}, {1.4142135f});
  b.FloatInitializer(y + "_one", {}, {1.0f});
  b.FloatInitializer(y + "_half", {}, {0.5f});
  b.Node("Div", {x, y + "_sqrt2"}, {y + "_d"});
  b.Node("Erf", {y + "_d"}, {y + "_e"});
  b.Node("Add", {y + "_e", y + "_one"}, {y + "_a"});
  b.Node("Mul", {x, y + "_a"}, {y + "_m"});
  b.Node("Mul", {y + "_m", y + "_half"}, {y});
}

void AddMatMulCases(std::vector<DeviceTestCase>& cases) {
  struct Variant {
    const char* name;
    Shape a, b;                 // -1: batch
    std::vector<Shape> a_runs;  // the A shape of each run
    std::vector<Shape> b_runs;
  };
  const Variant variants[] = {
      {"matmul_2d", {-1, 12}, {12, 9}, {{5, 12}, {1, 12}}, {{12, 9}, {12, 9}}},
      {"matmul_3d_by_2d", {-1, 4, 12}, {12, 9}, {{3, 4, 12}}, {{12, 9}}},
      {"matmul_batched", {-1, 4, 12}, {-1, 12, 9}, {{3, 4, 12}}, {{3, 12, 9}}},
      {"matmul_4d_batched",
       {2, -1, 4, 8},
       {2, -1, 8, 4},
       {{2, 3, 4, 8}},
       {{2, 3, 8, 4}}},
      {"matmul_left_one", {4, 12}, {-1, 12, 9}, {{4, 12}}, {{3, 12, 9}}},
      {"matmul_vector_left", {12}, {-1, 12, 9}, {{12}}, {{2, 12, 9}}},
      {"matmul_vector_right", {-1, 4, 12}, {12}, {{3, 4, 12}}, {{12}}},
  };
  for (const Variant& v : variants) {
    std::vector<std::vector<Shape>> runs;
    for (size_t r = 0; r < v.a_runs.size(); ++r)
      runs.push_back({v.a_runs[r], v.b_runs[r]});
    cases.push_back(OneNode(v.name, "MatMul", {v.a, v.b}, runs, 1e-5f));
  }
  // MatMul -> Add(bias) -> Relu: FusedMatMul with bias and Relu.
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8, 16});
  b.FloatInitializer("w", {16, 10}, RandomFloats(160, 14));
  b.FloatInitializer("bias", {10}, RandomFloats(10, 15));
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"a"});
  b.Node("Relu", {"a"}, {"y"});
  b.Output("y");
  cases.push_back({"matmul_bias_relu",
                   std::move(b),
                   true,
                   {{{2, 8, 16}}, {{1, 8, 16}}},
                   1e-5f});
  // BERT's FFN: MatMul + bias + the erf GELU pattern, one FusedMatMul with
  // activation Gelu (FP16 on a GPU: cuBLASLt's tanh-form GELU epilogue).
  {
    OnnxModelBuilder g(17);
    g.Input("x", {-1, 8, 16});
    g.FloatInitializer("w", {16, 10}, RandomFloats(160, 18));
    g.FloatInitializer("bias", {10}, RandomFloats(10, 19));
    g.Node("MatMul", {"x", "w"}, {"m"});
    g.Node("Add", {"m", "bias"}, {"h"});
    AddErfGelu(g, "h", "y");
    g.Output("y");
    cases.push_back(
        {"matmul_bias_gelu", std::move(g), true, {{{2, 8, 16}}}, 1e-5f});
  }
  // CLIP's FFN: MatMul + bias + quick GELU, x * Sigmoid(1.702 x), one
  // FusedMatMul with activation Silu of scale 1.702.
  {
    OnnxModelBuilder g(17);
    g.Input("x", {-1, 8, 16});
    g.FloatInitializer("w", {16, 10}, RandomFloats(160, 20));
    g.FloatInitializer("bias", {10}, RandomFloats(10, 21));
    g.FloatInitializer("c", {}, {1.702f});
    g.Node("MatMul", {"x", "w"}, {"m"});
    g.Node("Add", {"m", "bias"}, {"h"});
    g.Node("Mul", {"h", "c"}, {"hs"});
    g.Node("Sigmoid", {"hs"}, {"s"});
    g.Node("Mul", {"h", "s"}, {"y"});
    g.Output("y");
    cases.push_back(
        {"matmul_bias_quick_gelu", std::move(g), true, {{{2, 8, 16}}}, 1e-5f});
  }
  // A dense layer's residual (FusedMatMul's z): r of the output's shape,
  // which the GEMM adds (cuBLASLt's C), then Sigmoid after it; and a row r1
  // [1, 8, 10] broadcast over the batch, added after the GEMM.
  for (const bool broadcast : {false, true}) {
    OnnxModelBuilder r(17);
    r.Input("x", {-1, 8, 16});
    r.Input("r", {broadcast ? 1 : -1, 8, 10});
    r.FloatInitializer("w", {16, 10}, RandomFloats(160, 16));
    r.FloatInitializer("bias", {10}, RandomFloats(10, 17));
    r.Node("MatMul", {"x", "w"}, {"m"});
    r.Node("Add", {"m", "bias"}, {"a"});
    r.Node("Add", {"r", "a"}, {"s"});
    r.Node("Sigmoid", {"s"}, {"y"});
    r.Output("y");
    const Shape r_shape = broadcast ? Shape{1, 8, 10} : Shape{2, 8, 10};
    cases.push_back({broadcast ? "matmul_residual_broadcast"
                               : "matmul_bias_residual_sigmoid",
                     std::move(r),
                     true,
                     {{{2, 8, 16}, r_shape}},
                     1e-5f});
  }
}

void AddSoftmaxCases(std::vector<DeviceTestCase>& cases) {
  cases.push_back(OneNode("softmax_last", "Softmax", {{-1, 7, 300}},
                          {{{2, 7, 300}}, {{1, 7, 300}}}, 1e-6f, 13));
  cases.push_back(
      OneNode("softmax_opset11_flatten", "Softmax", {{-1, 3, 5}}, {{{2, 3, 5}}},
              1e-6f, 11, [](onnx::NodeProto& n) { SetIntAttr(n, "axis", 1); }));
  cases.push_back(OneNode("softmax_wide_row", "Softmax", {{-1, 5000}},
                          {{{3, 5000}}}, 1e-6f, 13));
}

// Exported attention (attention_pattern.h), which the device runs as one
// fused attention: q, k, v [batch, 5, 16] split into 2 heads of 8.
//   attention_torchscript: K transposed by one Transpose, sqrt(scale) on Q
//     and K, a [batch, 1, 5, 5] mask from a boolean input and a constant
//     pattern whose query row 0 allows no key (a fully masked row), and
//     PyTorch's Where(IsNaN(p), 0, p) guard, which makes that row 0;
//   attention_dynamo: K transposed through [batch * heads, 5, 8], the
//     scores divided by a constant, no mask.
// nn.MultiheadAttention as torchvision's ViT exports it, x [batch, 5, 16]:
// transposed to [5, batch, 16], one packed in-projection [16, 48] with its
// bias, reshaped to [5, batch, 3, 16] and through a 5-D transpose to
// [3, 5, batch, 16], entries 0, 1, 2 gathered as q, k and v, heads split
// through [5, batch * 2, 8], the merge through [5 * batch, 16] into the
// out-projection, a transpose back and the residual add. On a device both
// transposes are views (the projections compute the rows in x's order)
// and the Gathers are the attention's strides into the in-projection's
// result (attention_pattern.h, row_views).
void AddMultiheadAttentionCase(std::vector<DeviceTestCase>& cases) {
  constexpr int64_t kS = 5, kH = 2, kD = 8, kE = kH * kD;
  OnnxModelBuilder b(17);
  b.Input("x", {-1, kS, kE});
  // Weights in [-1/4, 1/4): outputs of about 1, which the FP16 cases'
  // tolerance (relative to max(1, |expected|)) is made for.
  auto quarter = [](std::vector<float> w) {
    for (float& v : w) v *= 0.25f;
    return w;
  };
  b.FloatInitializer("w_in", {kE, 3 * kE},
                     quarter(RandomFloats(kE * 3 * kE, 31)));
  b.FloatInitializer("b_in", {3 * kE}, RandomFloats(3 * kE, 32));
  b.FloatInitializer("w_out", {kE, kE}, quarter(RandomFloats(kE * kE, 33)));
  b.FloatInitializer("b_out", {kE}, RandomFloats(kE, 34));
  b.FloatInitializer("root_scale", {}, {0.5946036f});  // 8^-1/4
  b.Int64Initializer("sb3e", {4}, {0, 0, 3, kE});
  b.Int64Initializer("axis0", {1}, {0});
  b.Int64Initializer("axis3", {1}, {3});
  b.Int64Initializer("s_bh_d", {3}, {0, -1, kD});
  b.Int64Initializer("b_h_s_d", {4}, {-1, kH, kS, kD});
  b.Int64Initializer("rows_e", {2}, {-1, kE});
  b.Int64Initializer("s_b_e", {3}, {kS, -1, kE});
  SetIntsAttr(b.Node("Transpose", {"x"}, {"xt"}), "perm", {1, 0, 2});
  b.Node("MatMul", {"xt", "w_in"}, {"proj0"});
  b.Node("Add", {"proj0", "b_in"}, {"proj"});
  b.Node("Reshape", {"proj", "sb3e"}, {"p4"});
  b.Node("Unsqueeze", {"p4", "axis0"}, {"p5"});
  SetIntsAttr(b.Node("Transpose", {"p5"}, {"p5t"}), "perm", {3, 1, 2, 0, 4});
  b.Node("Squeeze", {"p5t", "axis3"}, {"packed"});
  const char* const names[] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) {
    const std::string n = names[i];
    b.Int64Initializer(n + "_entry", {}, {i});
    SetIntAttr(b.Node("Gather", {"packed", n + "_entry"}, {n + "sb"}), "axis",
               0);
    b.Node("Reshape", {n + "sb", "s_bh_d"}, {n + "3"});
    SetIntsAttr(b.Node("Transpose", {n + "3"}, {n + "3t"}), "perm", {1, 0, 2});
    b.Node("Reshape", {n + "3t", "b_h_s_d"}, {n + "h"});
  }
  b.Node("Mul", {"qh", "root_scale"}, {"qs"});
  SetIntsAttr(b.Node("Transpose", {"kh"}, {"kt"}), "perm", {0, 1, 3, 2});
  b.Node("Mul", {"kt", "root_scale"}, {"ks"});
  b.Node("MatMul", {"qs", "ks"}, {"s"});
  SetIntAttr(b.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "vh"}, {"o"});
  SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm", {2, 0, 1, 3});
  b.Node("Reshape", {"ot", "rows_e"}, {"rows"});
  b.Node("MatMul", {"rows", "w_out"}, {"out0"});
  b.Node("Add", {"out0", "b_out"}, {"out1"});
  b.Node("Reshape", {"out1", "s_b_e"}, {"out2"});
  SetIntsAttr(b.Node("Transpose", {"out2"}, {"attended"}), "perm", {1, 0, 2});
  b.Node("Add", {"x", "attended"}, {"y"});  // the residual
  b.Output("y");
  cases.push_back({"attention_multihead",
                   std::move(b),
                   true,
                   {{Shape{3, kS, kE}}, {Shape{1, kS, kE}}},
                   1e-5f});
}

// q, k, v [batch, len, heads * head_dim] and keep [batch, len] (bool):
// attention over the heads with Hugging Face's padding mask, (1 - keep) *
// float32's lowest, scores divided by sqrt(head_dim).
DeviceTestCase PaddingMaskAttention(const char* name, int64_t len,
                                    int64_t heads, int64_t head_dim) {
  const int64_t e = heads * head_dim;
  OnnxModelBuilder b(17);
  for (const char* x : {"q", "k", "v"}) b.Input(x, {-1, len, e});
  b.Input("keep", {-1, len}, onnx::TensorProto::BOOL);
  b.Int64Initializer("split", {4}, {0, len, heads, head_dim});
  b.Int64Initializer("merge", {3}, {0, len, e});
  b.Int64Initializer("keep4", {4}, {-1, 1, 1, len});
  b.FloatInitializer("one", {}, {1.0f});
  b.FloatInitializer("lowest", {}, {-3.4028235e38f});
  b.FloatInitializer("root_d", {},
                     {static_cast<float>(std::sqrt(double(head_dim)))});
  auto split_heads = [&](const std::string& x,
                         const std::vector<int64_t>& perm) {
    b.Node("Reshape", {x, "split"}, {x + "4"});
    SetIntsAttr(b.Node("Transpose", {x + "4"}, {x + "h"}), "perm", perm);
    return x + "h";
  };
  b.Node("Reshape", {"keep", "keep4"}, {"keep_b"});
  SetIntAttr(b.Node("Cast", {"keep_b"}, {"keep_f"}), "to",
             onnx::TensorProto::FLOAT);
  b.Node("Sub", {"one", "keep_f"}, {"drop"});
  b.Node("Mul", {"drop", "lowest"}, {"mask"});
  b.Node("MatMul",
         {split_heads("q", {0, 2, 1, 3}), split_heads("k", {0, 2, 3, 1})},
         {"qk"});
  b.Node("Div", {"qk", "root_d"}, {"qs"});
  b.Node("Add", {"qs", "mask"}, {"s"});
  SetIntAttr(b.Node("Softmax", {"s"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", split_heads("v", {0, 2, 1, 3})}, {"o"});
  SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm", {0, 2, 1, 3});
  b.Node("Reshape", {"ot", "merge"}, {"y"});
  b.Output("y");
  std::vector<Shape> shapes(3, Shape{3, len, e});
  shapes.push_back({3, len});
  return {name, std::move(b), true, {shapes}, 1e-5f};
}

void AddAttentionCases(std::vector<DeviceTestCase>& cases) {
  constexpr int64_t kS = 5, kH = 2, kD = 8, kE = kH * kD;
  for (const bool dynamo : {false, true}) {
    OnnxModelBuilder b(17);
    for (const char* x : {"q", "k", "v"}) b.Input(x, {-1, kS, kE});
    b.Int64Initializer("split", {4}, {0, kS, kH, kD});
    b.Int64Initializer("merge", {3}, {0, kS, kE});
    auto heads = [&](const std::string& x, const std::vector<int64_t>& perm) {
      b.Node("Reshape", {x, "split"}, {x + "4"});
      SetIntsAttr(b.Node("Transpose", {x + "4"}, {x + "h"}), "perm", perm);
      return x + "h";
    };
    std::string q = heads("q", {0, 2, 1, 3}), scores = "s";
    if (dynamo) {
      b.Int64Initializer("bh", {3}, {-1, kS, kD});
      b.Int64Initializer("bhT", {4}, {-1, kH, kD, kS});
      b.FloatInitializer("root_d", {}, {2.828427f});
      b.Node("Reshape", {heads("k", {0, 2, 1, 3}), "bh"}, {"k3"});
      SetIntsAttr(b.Node("Transpose", {"k3"}, {"k3t"}), "perm", {0, 2, 1});
      b.Node("Reshape", {"k3t", "bhT"}, {"kT"});
      b.Node("MatMul", {q, "kT"}, {"qk"});
      b.Node("Div", {"qk", "root_d"}, {"s"});
    } else {
      b.Input("keep", {-1, kS}, onnx::TensorProto::BOOL);
      b.Int64Initializer("keep4", {4}, {-1, 1, 1, kS});
      bool pattern[kS * kS];
      for (int64_t i = 0; i < kS * kS; ++i)
        pattern[i] = i >= kS && (i % kS) <= (i / kS);  // causal, row 0 none
      b.RawInitializer("pattern", onnx::TensorProto::BOOL, {kS, kS}, pattern,
                       sizeof pattern);
      b.FloatInitializer("zero", {}, {0.0f});
      b.FloatInitializer("lowest", {}, {-INFINITY});
      b.FloatInitializer("root_scale", {}, {0.5946036f});  // 8^-1/4
      b.Node("Reshape", {"keep", "keep4"}, {"keep_b"});
      b.Node("And", {"keep_b", "pattern"}, {"allowed"});
      b.Node("Where", {"allowed", "zero", "lowest"}, {"mask"});
      b.Node("Mul", {q, "root_scale"}, {"qs"});
      b.Node("Mul", {heads("k", {0, 2, 3, 1}), "root_scale"}, {"ks"});
      b.Node("MatMul", {"qs", "ks"}, {"qk"});
      b.Node("Add", {"qk", "mask"}, {"s"});
    }
    SetIntAttr(b.Node("Softmax", {scores}, {"p"}), "axis", -1);
    std::string p = "p";
    if (!dynamo) {
      b.Node("IsNaN", {"p"}, {"nan"});
      b.Node("Where", {"nan", "zero", "p"}, {"pg"});
      p = "pg";
    }
    b.Node("MatMul", {p, heads("v", {0, 2, 1, 3})}, {"o"});
    SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm", {0, 2, 1, 3});
    b.Node("Reshape", {"ot", "merge"}, {"y"});
    b.Output("y");
    std::vector<Shape> shapes(3, Shape{3, kS, kE});
    if (!dynamo) shapes.push_back({3, kS});
    cases.push_back({dynamo ? "attention_dynamo" : "attention_torchscript",
                     std::move(b),
                     true,
                     {shapes},
                     1e-5f});
  }
  // Hugging Face's padding mask, (1 - keep) * float32's lowest over [batch,
  // 1, 1, 70] keys (more than one key tile): the fused attention skips the
  // keys after each sequence's last kept one (attention_math.h, RowKeyEnd),
  // exactly. Also with head dimensions that are not a multiple of 16 and
  // lengths that are not of the kernels' tiles (40 over 37 positions, 3
  // heads), and BERT-base's head dimension over 130 positions.
  cases.push_back(PaddingMaskAttention("attention_padding_mask", 70, 2, 8));
  cases.push_back(PaddingMaskAttention("attention_head_dim_40", 37, 3, 40));
  cases.push_back(PaddingMaskAttention("attention_head_dim_64", 130, 2, 64));
  AddMultiheadAttentionCase(cases);
}

// Expand of a batched input along a middle axis and to a higher rank; and
// BERT's token types: an int64 row of zeros expanded to [batch, width]
// (Shape of the input), too large for the planner to fold (64 KB), cast
// and added to the input.
void AddExpandCases(std::vector<DeviceTestCase>& cases) {
  {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 1, 5});
    b.Int64Initializer("shape", {3}, {1, 4, 5});
    b.Node("Expand", {"x", "shape"}, {"y"});
    b.Output("y");
    cases.push_back({"expand_middle_axis",
                     std::move(b),
                     true,
                     {{{3, 1, 5}}, {{1, 1, 5}}},
                     0.0f});
  }
  {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 3});
    b.Int64Initializer("shape", {4}, {2, 1, 1, 3});
    b.Node("Expand", {"x", "shape"}, {"y"});
    b.Output("y");
    cases.push_back(
        {"expand_higher_rank", std::move(b), true, {{{4, 3}}}, 0.0f});
  }
  constexpr int64_t kWidth = 9000;  // 2 rows of int64: 144 KB
  OnnxModelBuilder b(13);
  b.Input("x", {-1, kWidth});
  std::vector<int64_t> row(kWidth);
  for (int64_t i = 0; i < kWidth; ++i) row[i] = i % 7 - 3;
  b.Int64Initializer("row", {1, kWidth}, row);
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Expand", {"row", "shape"}, {"rows"});
  SetIntAttr(b.Node("Cast", {"rows"}, {"rows_f"}), "to",
             onnx::TensorProto::FLOAT);
  b.Node("Add", {"x", "rows_f"}, {"y"});
  b.Output("y");
  cases.push_back(
      {"expand_int64_unfolded", std::move(b), true, {{{2, kWidth}}}, 0.0f});
}

void AddDataMovementCases(std::vector<DeviceTestCase>& cases) {
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 1}, {2, 0, 1}, {1, 2, 0}}) {
    cases.push_back(
        OneNode(absl::StrCat("transpose_", perm[0], perm[1], perm[2]),
                "Transpose", {{-1, 5, 7}}, {{{3, 5, 7}}}, 0.0f, 13,
                [perm](onnx::NodeProto& n) { SetIntsAttr(n, "perm", perm); }));
  }
  for (int64_t axis : {0, 1, -1}) {
    const std::string name =
        axis < 0 ? "concat_last_axis" : absl::StrCat("concat_axis", axis);
    cases.push_back(
        OneNode(name, "Concat", {{-1, 3, 4}, {-1, 3, 4}, {-1, 3, 4}},
                {{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}}, 0.0f, 13,
                [axis](onnx::NodeProto& n) { SetIntAttr(n, "axis", axis); }));
  }
  AddExpandCases(cases);
  // Views in a chain, the last one a model output (a copy, not a view).
  OnnxModelBuilder b(13);
  b.Input("x", {-1, 2, 3, 4});
  b.Int64Initializer("shape", {2}, {-1, 12});
  b.Int64Initializer("axes", {1}, {1});
  b.Node("Flatten", {"x"}, {"f"});
  b.Node("Reshape", {"f", "shape"}, {"r"});
  b.Node("Unsqueeze", {"r", "axes"}, {"u"});
  b.Node("Relu", {"u"}, {"ru"});
  b.Node("Squeeze", {"ru", "axes"}, {"s"});
  b.Node("Identity", {"s"}, {"y"});
  b.Output("y");
  b.Output("ru");
  cases.push_back({"views", std::move(b), true, {{{3, 2, 3, 4}}}, 0.0f});
  OnnxModelBuilder d(13);  // Dropout at inference: a view, and an all-true mask
  d.Input("x", {-1, 6});
  d.Node("Dropout", {"x"}, {"d", "mask"});
  d.Node("Relu", {"d"}, {"y"});
  d.Output("y");
  d.Output("mask", {}, onnx::TensorProto::BOOL);
  cases.push_back({"dropout_mask", std::move(d), true, {{{3, 6}}}, 0.0f});
}

void AddNormalizationAndIndexingCases(std::vector<DeviceTestCase>& cases) {
  // Plain LayerNorm over 300 columns (the warp-per-row kernel on a GPU),
  // 1025 and 2100 (the block kernel, with and past its register cache).
  for (const int64_t cols : {300, 1025, 2100}) {
    for (bool bias : {true, false}) {
      if (cols != 300 && !bias) continue;
      OnnxModelBuilder b(17);
      b.Input("x", {-1, 5, cols});
      b.FloatInitializer("scale", {cols}, RandomFloats(cols, 21));
      b.FloatInitializer("bias", {cols}, RandomFloats(cols, 22));
      std::vector<std::string> in = {"x", "scale"};
      if (bias) in.push_back("bias");
      SetFloatAttr(b.Node("LayerNormalization", in, {"y"}), "epsilon", 1e-5f);
      b.Output("y");
      std::string name = bias ? "layer_norm_bias" : "layer_norm";
      if (cols != 300) absl::StrAppend(&name, "_", cols);
      cases.push_back({std::move(name),
                       std::move(b),
                       true,
                       {{{2, 5, cols}}, {{1, 5, cols}}},
                       1e-5f});
    }
  }
  // A residual Add fused into its LayerNorm (plan_lowering.h): the sum s
  // read again after the LayerNorm (the LayerNorm writes it too), over
  // 300 columns, 1024 and 1025 (the last row of the CUDA warp-per-row
  // kernel and the first of the block kernel, whose register cache holds
  // it) and 2100 (past the register cache); and a position embedding
  // [1, 5, 64] repeated over the batch, whose sum nothing else reads (the
  // Add runs nowhere).
  for (const int64_t cols : {300, 1024, 1025, 2100}) {
    OnnxModelBuilder b(17);
    b.Input("x", {-1, 5, cols}).Input("r", {-1, 5, cols});
    b.FloatInitializer("scale", {cols}, RandomFloats(cols, 24));
    b.FloatInitializer("bias", {cols}, RandomFloats(cols, 25));
    b.Node("Add", {"x", "r"}, {"s"});
    SetFloatAttr(b.Node("LayerNormalization", {"s", "scale", "bias"}, {"n"}),
                 "epsilon", 1e-5f);
    b.Node("Add", {"s", "n"}, {"y"});
    b.Output("y");
    cases.push_back(
        {cols == 300    ? std::string("residual_layer_norm")
         : cols == 2100 ? std::string("residual_layer_norm_wide")
                        : absl::StrCat("residual_layer_norm_", cols),
         std::move(b),
         true,
         {{{2, 5, cols}, {2, 5, cols}}, {{1, 5, cols}, {1, 5, cols}}},
         1e-5f});
  }
  {
    // A residual of one row ([64], a constant): repeated over every row.
    OnnxModelBuilder b(17);
    b.Input("x", {-1, 5, 64});
    b.FloatInitializer("row", {64}, RandomFloats(64, 28));
    b.FloatInitializer("scale", {64}, RandomFloats(64, 29));
    b.Node("Add", {"x", "row"}, {"s"});
    SetFloatAttr(b.Node("LayerNormalization", {"s", "scale"}, {"y"}), "epsilon",
                 1e-5f);
    b.Output("y");
    cases.push_back({"row_layer_norm",
                     std::move(b),
                     true,
                     {{{2, 5, 64}}, {{1, 5, 64}}},
                     1e-5f});
  }
  {
    OnnxModelBuilder b(17);
    b.Input("x", {-1, 5, 64});
    b.FloatInitializer("position", {1, 5, 64}, RandomFloats(320, 26));
    b.FloatInitializer("scale", {64}, RandomFloats(64, 27));
    b.Node("Add", {"x", "position"}, {"s"});
    SetFloatAttr(b.Node("LayerNormalization", {"s", "scale"}, {"y"}), "epsilon",
                 1e-5f);
    b.Output("y");
    cases.push_back({"embedding_layer_norm",
                     std::move(b),
                     true,
                     {{{3, 5, 64}}, {{1, 5, 64}}},
                     1e-5f});
  }
  {
    // An embedding lookup: a constant table by int64 token ids.
    OnnxModelBuilder b(13);
    b.FloatInitializer("table", {50, 16}, RandomFloats(800, 23));
    b.Input("ids", {-1, 7}, onnx::TensorProto::INT64);
    b.Node("Gather", {"table", "ids"}, {"y"});
    b.Output("y");
    DeviceTestCase c{
        "gather_embedding", std::move(b), true, {{{3, 7}}, {{1, 7}}}, 0.0f};
    c.index_bound = 50;
    cases.push_back(std::move(c));
  }
  {
    // Gather on axis 1 of a float input by int32 indices, negative included.
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 6, 4});
    const int32_t idx[] = {5, -1, 0, 2};
    b.RawInitializer("idx", onnx::TensorProto::INT32, {4}, idx, sizeof(idx));
    SetIntAttr(b.Node("Gather", {"x", "idx"}, {"y"}), "axis", 1);
    b.Output("y");
    cases.push_back({"gather_axis1", std::move(b), true, {{{3, 6, 4}}}, 0.0f});
  }
  for (auto [name, type] : {std::pair{"cast_int64", onnx::TensorProto::INT64},
                            std::pair{"cast_bool", onnx::TensorProto::BOOL}}) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 9}, type);
    SetIntAttr(b.Node("Cast", {"x"}, {"y"}), "to", onnx::TensorProto::FLOAT);
    b.Output("y");
    cases.push_back({name, std::move(b), true, {{{4, 9}}}, 0.0f});
  }
}

// x -> depthwise 3x3 convolution with bias (weights from `seed` and
// seed + 1) -> SiLU written as Mul(d, Sigmoid(d)) -> `out`.
void DepthwiseSilu(OnnxModelBuilder& b, int64_t c, const std::string& x,
                   const std::string& out, uint32_t seed) {
  b.FloatInitializer("dw", {c, 1, 3, 3}, RandomFloats(c * 9, seed));
  b.FloatInitializer("dwb", {c}, RandomFloats(c, seed + 1));
  auto& dw = b.Node("Conv", {x, "dw", "dwb"}, {"d"});
  SetIntsAttr(dw, "pads", {1, 1, 1, 1});
  SetIntAttr(dw, "group", c);
  b.Node("Sigmoid", {"d"}, {"ds"});
  b.Node("Mul", {"d", "ds"}, {out});
}

// Squeeze-excitation of x [N, c, H, W] into `out`: global pool, 1x1
// convolution to r channels + bias, Relu or SiLU (`silu`), 1x1 convolution
// back + bias, Sigmoid, the gate broadcast over x's planes (weights from
// `seed` to seed + 3).
void SqueezeExcitation(OnnxModelBuilder& b, int64_t c, int64_t r,
                       const std::string& x, const std::string& out, bool silu,
                       uint32_t seed) {
  b.FloatInitializer("w1", {r, c, 1, 1}, RandomFloats(r * c, seed));
  b.FloatInitializer("b1", {r}, RandomFloats(r, seed + 1));
  b.FloatInitializer("w2", {c, r, 1, 1}, RandomFloats(r * c, seed + 2));
  b.FloatInitializer("b2", {c}, RandomFloats(c, seed + 3));
  b.Node("GlobalAveragePool", {x}, {"g"});
  b.Node("Conv", {"g", "w1", "b1"}, {"s1"});
  if (silu) {
    b.Node("Sigmoid", {"s1"}, {"s1s"});
    b.Node("Mul", {"s1", "s1s"}, {"s2"});
  } else {
    b.Node("Relu", {"s1"}, {"s2"});
  }
  b.Node("Conv", {"s2", "w2", "b2"}, {"s3"});
  b.Node("Sigmoid", {"s3"}, {"gate"});
  b.Node("Mul", {x, "gate"}, {out});
}

// EfficientNet's MBConv block and its parts, on x [N, 16, 14, 15].
void AddMbconvCases(std::vector<DeviceTestCase>& cases) {
  const int64_t c = 16, r = 4;
  const std::vector<std::vector<Shape>> runs = {{{2, c, 14, 15}}};
  auto add = [&](const char* name, auto&& build) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, c, 14, 15});
    build(b);
    b.Output("y");
    cases.push_back({name, std::move(b), true, runs, 1e-5f});
  };
  // The block: depthwise 3x3 + SiLU, squeeze-excitation (global pool, 1x1
  // conv + SiLU, 1x1 conv + Sigmoid, broadcast Mul), projection 1x1 conv,
  // residual Add. FP16 with the NCHW layout gave NaN on EfficientNet-B0 on
  // an H100 (BENCHMARKS.md, issue 26's first measurement), and this block
  // wrong values on an H100 and an H200 (graph_conv_scope.h).
  add("mbconv_se", [&](OnnxModelBuilder& b) {
    DepthwiseSilu(b, c, "x", "a", 41);
    SqueezeExcitation(b, c, r, "a", "e", /*silu=*/true, 43);
    b.FloatInitializer("wp", {c, c, 1, 1}, RandomFloats(c * c, 47));
    b.Node("Conv", {"e", "wp"}, {"p"});
    b.Node("Add", {"p", "x"}, {"y"});
  });
  // Its parts that no other case has, each alone, so that a failure of the
  // block on a GPU names its part: the squeeze-excitation with Relu and with
  // SiLU; a depthwise convolution + SiLU whose result stays 16-bit (pooled
  // next); a 1x1 convolution whose residual is the float32 model input.
  add("squeeze_excitation", [&](OnnxModelBuilder& b) {
    SqueezeExcitation(b, c, r, "x", "y", /*silu=*/false, 48);
  });
  add("se_silu", [&](OnnxModelBuilder& b) {
    SqueezeExcitation(b, c, r, "x", "y", /*silu=*/true, 55);
  });
  add("depthwise_silu_half", [&](OnnxModelBuilder& b) {
    DepthwiseSilu(b, c, "x", "a", 53);
    b.Node("GlobalAveragePool", {"a"}, {"g"});
    b.Node("Mul", {"a", "g"}, {"y"});
  });
  add("residual_input_z", [&](OnnxModelBuilder& b) {
    b.FloatInitializer("wp", {c, c, 1, 1}, RandomFloats(c * c, 52));
    b.Node("Conv", {"x", "wp"}, {"p"});
    b.Node("Add", {"p", "x"}, {"y"});
  });
}

void AddCnnCases(std::vector<DeviceTestCase>& cases) {
  struct ConvVariant {
    const char* name;
    int64_t c, m, k, stride, pad, dilation, group;
    bool bias;
    const char* activation;  // "" or a following op the optimizer fuses
  };
  const ConvVariant convs[] = {
      {"conv3x3_pad1_bias_relu", 3, 8, 3, 1, 1, 1, 1, true, "Relu"},
      {"conv1x1", 8, 4, 1, 1, 0, 1, 1, false, ""},
      {"conv5x5_stride2", 4, 6, 5, 2, 2, 1, 1, true, ""},
      {"conv3x3_dilation2", 4, 4, 3, 1, 2, 2, 1, true, "Sigmoid"},
      {"conv3x3_groups", 8, 8, 3, 1, 1, 1, 4, true, "Relu"},
      // Depthwise (a group per channel), as MBConv's: mbconv_se below
      // fails in FP16 NCHW on a GPU at the first element of an image; this
      // case and squeeze_excitation tell its two halves apart.
      {"conv3x3_depthwise", 16, 16, 3, 1, 1, 1, 16, true, "Sigmoid"},
  };
  for (const ConvVariant& v : convs) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, v.c, 11, 13});
    b.FloatInitializer("w", {v.m, v.c / v.group, v.k, v.k},
                       RandomFloats(v.m * v.c / v.group * v.k * v.k, 31));
    std::vector<std::string> in = {"x", "w"};
    if (v.bias) {
      b.FloatInitializer("b", {v.m}, RandomFloats(v.m, 32));
      in.push_back("b");
    }
    const std::string conv_out = *v.activation ? "c" : "y";
    auto& n = b.Node("Conv", in, {conv_out});
    SetIntsAttr(n, "kernel_shape", {v.k, v.k});
    SetIntsAttr(n, "strides", {v.stride, v.stride});
    SetIntsAttr(n, "pads", {v.pad, v.pad, v.pad, v.pad});
    SetIntsAttr(n, "dilations", {v.dilation, v.dilation});
    SetIntAttr(n, "group", v.group);
    if (*v.activation) b.Node(v.activation, {"c"}, {"y"});
    b.Output("y");
    cases.push_back({v.name, std::move(b), true, {{{2, v.c, 11, 13}}}, 1e-5f});
  }
  {
    OnnxModelBuilder b(13);  // SAME_UPPER on an odd input: pads (1, 1)
    b.Input("x", {-1, 3, 9, 9});
    b.FloatInitializer("w", {4, 3, 3, 3}, RandomFloats(108, 33));
    SetStringAttr(b.Node("Conv", {"x", "w"}, {"y"}), "auto_pad", "SAME_UPPER");
    b.Output("y");
    cases.push_back(
        {"conv_same_upper", std::move(b), true, {{{1, 3, 9, 9}}}, 1e-5f});
  }
  {
    OnnxModelBuilder b(17);  // Whisper's front end: 1-D, strided, with bias
    b.Input("x", {-1, 4, 20});
    b.FloatInitializer("w", {6, 4, 3}, RandomFloats(72, 34));
    b.FloatInitializer("b", {6}, RandomFloats(6, 35));
    auto& n = b.Node("Conv", {"x", "w", "b"}, {"c"});
    SetIntsAttr(n, "pads", {1, 1});
    SetIntsAttr(n, "strides", {2});
    b.Node("Relu", {"c"}, {"y"});
    b.Output("y");
    cases.push_back(
        {"conv1d_stride2", std::move(b), true, {{{2, 4, 20}}}, 1e-5f});
  }
  struct PoolVariant {
    const char* name;
    const char* op;
    int64_t k, stride;
    std::vector<int64_t> pads;
    int64_t ceil, include_pad;
  };
  const PoolVariant pools[] = {
      {"maxpool3_s2", "MaxPool", 3, 2, {}, 0, 0},
      {"maxpool3_s2_ceil_asym", "MaxPool", 3, 2, {0, 0, 1, 1}, 1, 0},
      {"avgpool3_s1_pad", "AveragePool", 3, 1, {1, 1, 1, 1}, 0, 0},
      {"avgpool3_s2_include_pad", "AveragePool", 3, 2, {1, 1, 1, 1}, 1, 1},
  };
  for (const PoolVariant& v : pools) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 3, 12, 11});
    auto& n = b.Node(v.op, {"x"}, {"y"});
    SetIntsAttr(n, "kernel_shape", {v.k, v.k});
    SetIntsAttr(n, "strides", {v.stride, v.stride});
    if (!v.pads.empty()) SetIntsAttr(n, "pads", v.pads);
    SetIntAttr(n, "ceil_mode", v.ceil);
    if (std::string(v.op) == "AveragePool")
      SetIntAttr(n, "count_include_pad", v.include_pad);
    b.Output("y");
    cases.push_back({v.name, std::move(b), true, {{{2, 3, 12, 11}}}, 1e-6f});
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    cases.push_back(
        OneNode(op, op, {{-1, 5, 7, 6}}, {{{2, 5, 7, 6}}}, 1e-6f, 13));
  }
  // Large planes (57 x 59 pixels): the GPU's global pooling loops several
  // times per thread, and in NHWC its second tile of 32 channels is partial.
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    cases.push_back(OneNode(absl::StrCat(op, "_large"), op, {{-1, 40, 57, 59}},
                            {{{2, 40, 57, 59}}}, 1e-6f, 13));
  }
  AddMbconvCases(cases);
  cases.push_back(OneNode("lrn", "LRN", {{-1, 7, 4, 5}}, {{{2, 7, 4, 5}}},
                          1e-5f, 13, [](onnx::NodeProto& n) {
                            SetIntAttr(n, "size", 5);
                            SetFloatAttr(n, "alpha", 0.01f);
                            SetFloatAttr(n, "beta", 0.75f);
                            SetFloatAttr(n, "bias", 2.0f);
                          }));
  {
    // A BatchNormalization the optimizer cannot fold (it follows a Concat,
    // as in DenseNet).
    OnnxModelBuilder b(15);
    b.Input("a", {-1, 2, 5, 5});
    b.Input("c", {-1, 3, 5, 5});
    SetIntAttr(b.Node("Concat", {"a", "c"}, {"cat"}), "axis", 1);
    std::vector<float> var = RandomFloats(5, 34);
    for (float& x : var) x = std::fabs(x) + 0.1f;
    b.FloatInitializer("scale", {5}, RandomFloats(5, 35));
    b.FloatInitializer("bias", {5}, RandomFloats(5, 36));
    b.FloatInitializer("mean", {5}, RandomFloats(5, 37));
    b.FloatInitializer("var", {5}, var);
    b.Node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"},
           {"bn"});
    b.Node("Relu", {"bn"}, {"y"});
    b.Output("y");
    cases.push_back({"batch_norm_after_concat",
                     std::move(b),
                     true,
                     {{{2, 2, 5, 5}, {2, 3, 5, 5}}},
                     1e-5f});
  }
  cases.push_back(OneNode("sum3", "Sum", {{-1, 4, 3}, {-1, 4, 3}, {-1, 4, 3}},
                          {{{2, 4, 3}, {2, 4, 3}, {2, 4, 3}}}, 1e-6f, 13));
  // Residual convolutions (the optimizer's FusedConv with Z): with a bias
  // and Relu after the sum (ResNet's block), with a bias and nothing after,
  // and with neither; the first two are cuDNN's fused call on a GPU.
  for (const auto& [name, bias, relu] :
       {std::tuple{"residual_bias_relu", true, true},
        std::tuple{"residual_bias", true, false},
        std::tuple{"residual_plain", false, false}}) {
    OnnxModelBuilder b(13);
    b.Input("x", {-1, 4, 6, 7});
    b.FloatInitializer("w1", {8, 4, 3, 3}, RandomFloats(288, 38));
    b.FloatInitializer("ws", {8, 4, 1, 1}, RandomFloats(32, 39));
    b.FloatInitializer("b", {8}, RandomFloats(8, 40));
    std::vector<std::string> conv_in = {"x", "w1"};
    if (bias) conv_in.push_back("b");
    SetIntsAttr(b.Node("Conv", conv_in, {"c"}), "pads", {1, 1, 1, 1});
    b.Node("Conv", {"x", "ws"}, {"s"});  // the shortcut
    b.Node("Add", {"c", "s"}, {relu ? "sum" : "y"});
    if (relu) b.Node("Relu", {"sum"}, {"y"});
    b.Output("y");
    cases.push_back({name, std::move(b), true, {{{2, 4, 6, 7}}}, 1e-5f});
  }
}

// x * 0.5 * (1 + Erf(x / sqrt 2)) as exporters write GELU; the optimizer
// turns it into one Gelu node.
DeviceTestCase ErfGeluPattern() {
  OnnxModelBuilder b(13);
  b.Input("x", {-1, 64});
  AddErfGelu(b, "x", "y");
  b.Output("y");
  return {"erf_gelu_pattern", std::move(b), true, {{{4, 64}}}, 2e-6f};
}

// The integer and boolean arithmetic of attention masks, as exporters
// write it, feeding float outputs and a bool one: every typed op (int64 and
// int32 arithmetic with variadic, broadcasting Max/Min, comparisons,
// logic, IsNaN/IsInf, Where on floats and integers, Casts between types).
DeviceTestCase MaskArithmetic() {
  OnnxModelBuilder b(17);
  b.Input("ids", {-1, 6}, onnx::TensorProto::INT64);
  b.Input("scores", {-1, 6});
  for (int64_t k : {2, 3, 5, 7}) {
    b.Int64Initializer(absl::StrCat("k", k), {}, {k});
  }
  b.FloatInitializer("zero", {}, {0.0f});
  b.Node("Mod", {"ids", "k3"}, {"m"});
  SetIntAttr(b.Node("Cast", {"m"}, {"mb"}), "to", onnx::TensorProto::BOOL);
  b.Node("Not", {"mb"}, {"nb"});
  b.Node("GreaterOrEqual", {"ids", "m"}, {"ge"});
  b.Node("LessOrEqual", {"ids", "k7"}, {"le"});
  b.Node("Less", {"ids", "k5"}, {"lt"});
  b.Node("Greater", {"ids", "k2"}, {"gt"});
  b.Node("And", {"mb", "ge"}, {"a"});
  b.Node("Or", {"a", "le"}, {"o"});
  b.Node("Xor", {"o", "nb"}, {"x1"});
  b.Node("Equal", {"lt", "gt"}, {"x2"});
  b.Node("And", {"x1", "x2"}, {"mask"});
  b.Node("Max", {"ids", "m", "k3"}, {"mx"});
  b.Node("Min", {"ids", "k5"}, {"mn"});
  b.Node("Div", {"mx", "k2"}, {"d"});
  b.Node("Sub", {"d", "mn"}, {"s"});
  b.Node("Mul", {"s", "s"}, {"p"});
  b.Node("Neg", {"s"}, {"ng"});
  b.Node("Abs", {"ng"}, {"ab"});
  SetIntAttr(b.Node("Cast", {"p"}, {"p32"}), "to", onnx::TensorProto::INT32);
  b.Node("Add", {"p32", "p32"}, {"q32"});
  SetIntAttr(b.Node("Cast", {"q32"}, {"q"}), "to", onnx::TensorProto::INT64);
  b.Node("Equal", {"q", "p"}, {"never"});  // p is 0 only where q is
  SetIntAttr(b.Node("Cast", {"ab"}, {"f"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Div", {"f", "zero"}, {"fz"});  // inf, or NaN where f is 0
  b.Node("IsInf", {"fz"}, {"inf"});
  b.Node("Sqrt", {"scores"}, {"root"});  // NaN for negative scores
  b.Node("IsNaN", {"root"}, {"nan"});
  b.Node("Where", {"mask", "f", "scores"}, {"w1"});
  b.Node("Where", {"nan", "zero", "w1"}, {"w2"});
  b.Node("Where", {"inf", "ids", "q"}, {"wi"});
  SetIntAttr(b.Node("Cast", {"wi"}, {"wf"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Add", {"w2", "wf"}, {"y"});
  b.Output("y");
  b.Output("mask", {}, onnx::TensorProto::BOOL);
  b.Output("never", {}, onnx::TensorProto::BOOL);
  return {"mask_arithmetic", std::move(b), true, {{{3, 6}, {3, 6}}}, 0.0f};
}

// Position ids and pooling as encoders export them: CumSum of a mask
// (RoBERTa), GatherElements, GatherND with batch_dims and ArgMax (CLIP's
// pooled token).
DeviceTestCase IndexingChain() {
  OnnxModelBuilder b(17);
  b.Input("ids", {-1, 6}, onnx::TensorProto::INT64);
  b.Input("hidden", {-1, 6, 4});
  b.Int64Initializer("one", {}, {1});
  b.Int64Initializer("two", {}, {2});
  b.Node("CumSum", {"ids", "one"}, {"pos"});
  b.Node("Mod", {"pos", "two"}, {"parity"});
  SetIntAttr(b.Node("GatherElements", {"ids", "parity"}, {"picked"}), "axis",
             1);
  SetIntAttr(b.Node("ArgMax", {"ids"}, {"last"}), "axis", -1);
  SetIntAttr(b.Node("GatherND", {"hidden", "last"}, {"pooled"}), "batch_dims",
             1);
  b.Output("pooled");
  b.Output("picked", {}, onnx::TensorProto::INT64);
  return {"indexing_chain", std::move(b), true, {{{3, 6}, {3, 6, 4}}}, 0.0f};
}

// Swin's window plumbing and GPT-2's fused QKV: Pad, Slice with steps,
// Split, and the sum-like reductions (Swin v2's L2 norms).
DeviceTestCase MovementChain() {
  OnnxModelBuilder b(18);
  b.Input("x", {-1, 6, 12});
  b.Int64Initializer("pads", {6}, {0, 1, 2, 0, 1, 0});
  b.Node("Pad", {"x", "pads"}, {"padded"});  // [n, 8, 14]
  b.Int64Initializer("starts", {2}, {6, 1});
  b.Int64Initializer("ends", {2}, {-100, 13});
  b.Int64Initializer("axes", {2}, {1, 2});
  b.Int64Initializer("steps", {2}, {-2, 3});
  b.Node("Slice", {"padded", "starts", "ends", "axes", "steps"}, {"sliced"});
  b.Int64Initializer("split", {3}, {4, 4, 4});
  SetIntAttr(b.Node("Split", {"x", "split"}, {"q", "k", "v"}), "axis", -1);
  b.Int64Initializer("last", {1}, {-1});
  b.Node("ReduceL2", {"q", "last"}, {"l2"});
  b.Node("ReduceSum", {"k", "last"}, {"sum"});
  b.Node("ReduceMin", {"v", "last"}, {"min"});
  b.Node("Add", {"l2", "sum"}, {"ls"});
  b.Node("Add", {"ls", "min"}, {"y"});
  b.Output("sliced");
  b.Output("y");
  return {"movement_chain", std::move(b), true, {{{2, 6, 12}}}, 1e-5f};
}

// A QDQ pair around a convolution, as onnxruntime's quantization tool
// writes it: activations per tensor (uint8), weights per channel (int8,
// dequantized while planning).
DeviceTestCase QdqConv() {
  OnnxModelBuilder b(13);
  b.Input("x", {-1, 3, 6, 6});
  b.FloatInitializer("x_scale", {}, {0.02f});
  b.RawInitializer("x_zero", onnx::TensorProto::UINT8, {}, "\x80", 1);
  b.Node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"xq"});
  b.Node("DequantizeLinear", {"xq", "x_scale", "x_zero"}, {"xd"});
  std::vector<int8_t> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<int8_t>(i * 37 % 255 - 127);
  b.RawInitializer("wq", onnx::TensorProto::INT8, {4, 3, 3, 3}, w.data(),
                   w.size());
  b.FloatInitializer("w_scale", {4}, {0.01f, 0.02f, 0.005f, 0.03f});
  SetIntAttr(b.Node("DequantizeLinear", {"wq", "w_scale"}, {"wd"}), "axis", 0);
  b.Node("Conv", {"xd", "wd"}, {"y"});
  b.Output("y");
  return {"qdq_conv", std::move(b), true, {{{2, 3, 6, 6}}}, 1e-5f};
}

// DeepLab's head: bilinear upsampling to the input's size (half_pixel,
// sizes), then nearest by scales.
DeviceTestCase ResizeChain() {
  OnnxModelBuilder b(19);
  b.Input("x", {-1, 3, 5, 4});
  b.FloatInitializer("no_roi", {0}, {});
  b.FloatInitializer("no_scales", {0}, {});
  b.Int64Initializer("sizes", {2}, {13, 9});
  auto& up = b.Node("Resize", {"x", "no_roi", "no_scales", "sizes"}, {"u"});
  SetStringAttr(up, "mode", "linear");
  SetIntsAttr(up, "axes", {2, 3});
  b.FloatInitializer("scales", {4}, {1.0f, 1.0f, 0.5f, 1.5f});
  auto& down = b.Node("Resize", {"u", "no_roi", "scales"}, {"y"});
  SetStringAttr(down, "coordinate_transformation_mode", "asymmetric");
  SetStringAttr(down, "nearest_mode", "floor");
  b.Output("y");
  return {"resize_chain", std::move(b), true, {{{2, 3, 5, 4}}}, 1e-5f};
}

DeviceTestCase Mlp() {
  OnnxModelBuilder b;
  b.proto().ParseFromString(BuildMlpModel(256, 512, 10, 7));
  return {"mlp",
          std::move(b),
          true,
          {{{1, 256}}, {{17, 256}}, {{256, 256}}, {{1, 256}}},
          1e-5f};
}

}  // namespace

std::vector<DeviceTestCase> DeviceTestCases() {
  std::vector<DeviceTestCase> cases;
  AddActivationCases(cases);
  AddBinaryCases(cases);
  AddGemmCases(cases);
  AddMatMulCases(cases);
  AddSoftmaxCases(cases);
  AddAttentionCases(cases);
  AddDataMovementCases(cases);
  AddNormalizationAndIndexingCases(cases);
  AddCnnCases(cases);
  cases.push_back(ErfGeluPattern());
  cases.push_back(MaskArithmetic());
  cases.push_back(IndexingChain());
  cases.push_back(MovementChain());
  cases.push_back(QdqConv());
  cases.push_back(ResizeChain());
  cases.push_back(Mlp());
  return cases;
}

std::vector<TypedTensor> RandomInputs(const ModelSignature& signature,
                                      const std::vector<Shape>& shapes,
                                      int64_t index_bound) {
  static std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::uniform_int_distribution<int64_t> index(0, index_bound - 1);
  std::vector<TypedTensor> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : shapes[i]) n *= d;
    const DataType dtype = signature.inputs[i].dtype;
    if (dtype == DataType::kInt64 || dtype == DataType::kInt32) {
      std::vector<int64_t> v(n);
      for (int64_t& x : v) x = index(rng);
      if (dtype == DataType::kInt64) {
        tensors.push_back(MakeTyped(dtype, shapes[i], v));
      } else {
        tensors.push_back(MakeTyped(dtype, shapes[i],
                                    std::vector<int32_t>(v.begin(), v.end())));
      }
    } else if (dtype == DataType::kBool) {
      std::vector<uint8_t> v(n);
      for (uint8_t& x : v) x = index(rng) % 2;
      tensors.push_back(MakeBool(shapes[i], v));
    } else {
      std::vector<float> v(n);
      for (float& x : v) {
        do {
          x = real(rng);
        } while (x == 0.0f);
      }
      tensors.push_back(MakeTyped(DataType::kFp32, shapes[i], v));
    }
  }
  return tensors;
}

absl::StatusOr<std::vector<TypedTensor>> RunBatch(
    ExecutorInstance& executor, const ModelSignature& signature, int slot_index,
    const std::vector<TypedTensor>& inputs) {
  BatchSlot* slot = executor.slot(slot_index);
  std::vector<Shape> shapes;
  for (const TypedTensor& t : inputs) shapes.push_back(t.shape);
  if (absl::Status s = slot->SetInputShapes(shapes); !s.ok()) return s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::memcpy(slot->input_data(i), inputs[i].bytes.data(),
                inputs[i].bytes.size());
  }
  executor.CopyIn(slot);
  executor.Run(slot);
  if (absl::Status s = executor.CopyOut(slot)->Wait(); !s.ok()) return s;
  std::vector<TypedTensor> outputs;
  for (size_t i = 0; i < signature.outputs.size(); ++i) {
    const char* data = slot->output_data(i);
    outputs.push_back(
        {signature.outputs[i].dtype, slot->output_shape(i),
         std::vector<char>(data, data + slot->output_byte_size(i))});
  }
  return outputs;
}

std::string CompareOutputs(const std::vector<TypedTensor>& got,
                           const std::vector<TypedTensor>& want,
                           float tolerance) {
  if (got.size() != want.size()) {
    return absl::StrCat(got.size(), " outputs, expected ", want.size());
  }
  for (size_t o = 0; o < want.size(); ++o) {
    if (got[o].shape != want[o].shape || got[o].dtype != want[o].dtype) {
      return absl::StrCat("output ", o, " is ",
                          std::string(DataTypeName(got[o].dtype)), " ",
                          ShapeToString(got[o].shape), ", expected ",
                          std::string(DataTypeName(want[o].dtype)), " ",
                          ShapeToString(want[o].shape));
    }
    if (want[o].dtype != DataType::kFp32) {
      if (got[o].bytes != want[o].bytes) {
        return absl::StrCat("output ", o, " differs (not float: exact)");
      }
      continue;
    }
    const std::vector<float> g = got[o].values<float>(),
                             w = want[o].values<float>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (!(std::fabs(g[i] - w[i]) <=
            tolerance * std::max(1.0f, std::fabs(w[i])))) {
        return absl::StrCat("output ", o, " element ", i, ": ", g[i],
                            ", expected ", w[i], " (tolerance ", tolerance,
                            ")");
      }
    }
  }
  return "";
}

absl::StatusOr<std::shared_ptr<const Model>> LoadCase(const DeviceTestCase& c,
                                                      bool channels_last) {
  ModelOptions options = ModelOptions::ForDevice(channels_last);
  if (!c.optimize) options.optimizer = OptimizerOptions::None();
  return Model::LoadFromBytes(c.model.Serialize(), options);
}

std::string CheckAgainstCpu(const DeviceTestCase& c,
                            const std::shared_ptr<const Model>& model,
                            ExecutorInstance& executor) {
  for (size_t r = 0; r < c.runs.size(); ++r) {
    const std::vector<TypedTensor> inputs =
        RandomInputs(model->signature(), c.runs[r], c.index_bound);
    const int slot = static_cast<int>(r % executor.num_slots());
    auto got = RunBatch(executor, model->signature(), slot, inputs);
    if (!got.ok())
      return absl::StrCat("run ", r, ": ", got.status().ToString());
    auto want = RunModelTyped(model, inputs);
    if (!want.ok())
      return absl::StrCat("cpu run ", r, ": ", want.status().ToString());
    std::string diff = CompareOutputs(*got, *want, c.tolerance);
    if (!diff.empty()) return absl::StrCat("run ", r, ": ", diff);
  }
  return "";
}

}  // namespace coalesce::testing
