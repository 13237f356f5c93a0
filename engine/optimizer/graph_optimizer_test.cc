// Each pass: the optimized graph gives the unoptimized graph's outputs, and
// the rewrite happened (the node list changed as expected).
#include "engine/optimizer/graph_optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/op_registry.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::HostTensor;
using testing::OnnxModelBuilder;
using ::testing::UnorderedElementsAre;

std::vector<std::string> OpTypes(const Model& model) {
  std::vector<std::string> ops;
  for (const GraphNode& n : model.graph().nodes) ops.push_back(n.op_type);
  return ops;
}

// Loads `builder`'s model unoptimized and with `options`, runs both on
// `inputs`, expects outputs within 1e-5 relative, and returns the optimized
// model's op types.
std::vector<std::string> CompareAndGetOps(
    const OnnxModelBuilder& builder, const OptimizerOptions& options,
    const std::vector<HostTensor>& inputs) {
  const std::string bytes = builder.Serialize();
  auto plain = Model::LoadFromBytes(bytes, {OptimizerOptions::None()});
  auto optimized = Model::LoadFromBytes(bytes, {options});
  EXPECT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!plain.ok() || !optimized.ok()) return {};
  auto want = testing::RunModelOnce(*plain, inputs);
  auto got = testing::RunModelOnce(*optimized, inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return {};
  EXPECT_EQ(want->size(), got->size());
  for (size_t o = 0; o < want->size() && o < got->size(); ++o) {
    EXPECT_EQ((*want)[o].shape, (*got)[o].shape);
    const auto& w = (*want)[o].data;
    const auto& g = (*got)[o].data;
    EXPECT_EQ(w.size(), g.size());
    for (size_t i = 0; i < w.size() && i < g.size(); ++i)
      EXPECT_NEAR(g[i], w[i], 1e-5 + 1e-5 * std::abs(w[i]))
          << "output " << o << " at " << i;
  }
  return OpTypes(**optimized);
}

OptimizerOptions Only(bool OptimizerOptions::*pass) {
  OptimizerOptions o = OptimizerOptions::None();
  o.*pass = true;
  return o;
}

onnx::TensorProto FloatTensor(float v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.add_float_data(v);
  return t;
}

TEST(GraphOptimizerTest, ConstantFoldingRunsConstantSubgraphsOnce) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3}).Output("y");
  b.Int64Initializer("shape", {2}, {2, 3});
  auto& cos = b.Node("ConstantOfShape", {"shape"}, {"filled"});
  auto* value = cos.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = FloatTensor(0.25f);
  b.Node("Relu", {"filled"}, {"relu"});
  b.Node("Add", {"x", "relu"}, {"y"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::constant_folding),
                              {{{2, 3}, testing::RandomFloats(6, 1)}});
  EXPECT_THAT(ops, ElementsAre("Add"));
}

// Conv -> BatchNormalization -> Mul [C,1,1] -> Add [1,C,1,1] (DenseNet's
// exported form) is one Conv afterwards.
TEST(GraphOptimizerTest, ConvChannelAffineFoldsIntoConv) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3, 6, 6}).Output("y");
  b.FloatInitializer("w", {4, 3, 3, 3}, testing::RandomFloats(108, 2));
  b.FloatInitializer("cb", {4}, testing::RandomFloats(4, 3));
  b.FloatInitializer("s", {4}, {0.5f, 1.5f, -1.0f, 2.0f});
  b.FloatInitializer("bb", {4}, {0.1f, -0.2f, 0.3f, 0.0f});
  b.FloatInitializer("m", {4}, {0.05f, 0.1f, -0.1f, 0.2f});
  b.FloatInitializer("v", {4}, {1.0f, 0.5f, 2.0f, 0.25f});
  b.FloatInitializer("mul", {4, 1, 1}, {2.0f, 0.5f, 1.0f, -1.0f});
  b.FloatInitializer("add", {1, 4, 1, 1}, {0.3f, 0.2f, 0.1f, 0.0f});
  b.Node("Conv", {"x", "w", "cb"}, {"c"});
  b.Node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"bn"});
  b.Node("Mul", {"bn", "mul"}, {"scaled"});
  b.Node("Add", {"add", "scaled"}, {"y"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::conv_affine_folding),
                              {{{2, 3, 6, 6}, testing::RandomFloats(216, 4)}});
  EXPECT_THAT(ops, ElementsAre("Conv"));
}

TEST(GraphOptimizerTest, ConvWithASecondUseIsNotFolded) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 2, 4, 4}).Output("y").Output("c");
  b.FloatInitializer("w", {2, 2, 1, 1}, {1, 2, 3, 4});
  b.FloatInitializer("mul", {2, 1, 1}, {2.0f, 3.0f});
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Mul", {"c", "mul"}, {"y"});
  OptimizerOptions options;
  options.channels_last = false;  // its transposes are tested below
  auto ops = CompareAndGetOps(b, options,
                              {{{1, 2, 4, 4}, testing::RandomFloats(32, 5)}});
  EXPECT_THAT(ops, ElementsAre("Conv", "Mul"));
}

TEST(GraphOptimizerTest, ActivationsFuseIntoConvGemmAndMatMulWithBias) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 2, 5, 5}).Input("a", {3, 4}).Input("t", {2, 3, 4});
  b.Output("conv").Output("gemm").Output("mm");
  b.FloatInitializer("w", {3, 2, 3, 3}, testing::RandomFloats(54, 6));
  b.FloatInitializer("gw", {4, 5}, testing::RandomFloats(20, 7));
  b.FloatInitializer("mw", {4, 6}, testing::RandomFloats(24, 8));
  b.FloatInitializer("mb", {6}, testing::RandomFloats(6, 9));
  b.FloatInitializer("lo", {}, {-0.2f});
  b.FloatInitializer("hi", {}, {0.3f});
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Relu", {"c"}, {"conv"});
  b.Node("Gemm", {"a", "gw"}, {"g"});
  b.Node("Sigmoid", {"g"}, {"gemm"});
  b.Node("MatMul", {"t", "mw"}, {"m"});
  b.Node("Add", {"m", "mb"}, {"mb_out"});
  b.Node("Clip", {"mb_out", "lo", "hi"}, {"mm"});
  OptimizerOptions options = Only(&OptimizerOptions::activation_fusion);
  options.matmul_bias_fusion = true;
  auto ops = CompareAndGetOps(b, options,
                              {{{1, 2, 5, 5}, testing::RandomFloats(50, 10)},
                               {{3, 4}, testing::RandomFloats(12, 11)},
                               {{2, 3, 4}, testing::RandomFloats(24, 12)}});
  EXPECT_THAT(ops, ElementsAre("FusedConv", "FusedGemm", "FusedMatMul"));
}

// A dense layer's residual Add (BERT's dense + bias + residual, then Relu
// to check the activation comes after z) becomes one FusedMatMul with z as
// its fourth input, also when z broadcasts the product to a larger shape;
// the product of two activations (attention's Q Kᵀ) keeps its Add, which is
// the attention's mask.
TEST(GraphOptimizerTest, DenseLayerResidualFusesIntoMatMul) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3, 4}).Input("r", {2, 3, 6}).Input("q", {2, 3, 4});
  b.Input("k", {2, 4, 3}).Input("mask", {2, 1, 3}).Input("wide", {5, 1, 1, 1});
  b.Output("dense").Output("scores").Output("broadcast");
  b.FloatInitializer("w", {4, 6}, testing::RandomFloats(24, 21));
  b.FloatInitializer("bias", {6}, testing::RandomFloats(6, 22));
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"mb"});
  b.Node("Add", {"r", "mb"}, {"res"});
  b.Node("Relu", {"res"}, {"dense"});
  b.Node("MatMul", {"q", "k"}, {"qk"});
  b.Node("Add", {"qk", "mask"}, {"scores"});
  b.Node("MatMul", {"x", "w"}, {"m2"});
  b.Node("Add", {"m2", "wide"}, {"broadcast"});
  OptimizerOptions options = Only(&OptimizerOptions::residual_fusion);
  options.matmul_bias_fusion = true;
  options.activation_fusion = true;
  auto ops = CompareAndGetOps(b, options,
                              {{{2, 3, 4}, testing::RandomFloats(24, 23)},
                               {{2, 3, 6}, testing::RandomFloats(36, 24)},
                               {{2, 3, 4}, testing::RandomFloats(24, 25)},
                               {{2, 4, 3}, testing::RandomFloats(24, 26)},
                               {{2, 1, 3}, testing::RandomFloats(6, 27)},
                               {{5, 1, 1, 1}, testing::RandomFloats(5, 28)}});
  EXPECT_THAT(ops, ElementsAre("FusedMatMul", "MatMul", "FusedMatMul", "Add"));
}

// BERT's FFN: MatMul + bias + the erf GELU pattern becomes one FusedMatMul
// with activation Gelu; ONNX's Gelu (opset 20, approximate="tanh") after a
// Gemm fuses as GeluTanh. Outputs as the unfused graph's.
TEST(GraphOptimizerTest, GeluFusesIntoItsGemm) {
  OnnxModelBuilder b(20);
  b.Input("x", {2, 3, 4}).Input("a", {3, 4});
  b.Output("ffn").Output("gemm");
  b.FloatInitializer("w", {4, 6}, testing::RandomFloats(24, 31));
  b.FloatInitializer("bias", {6}, testing::RandomFloats(6, 32));
  b.FloatInitializer("gw", {4, 5}, testing::RandomFloats(20, 33));
  b.FloatInitializer("root2", {}, {1.4142135f});
  b.FloatInitializer("one", {}, {1.0f});
  b.FloatInitializer("half", {}, {0.5f});
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"h"});
  b.Node("Div", {"h", "root2"}, {"hs"});
  b.Node("Erf", {"hs"}, {"e"});
  b.Node("Add", {"e", "one"}, {"e1"});
  b.Node("Mul", {"h", "e1"}, {"he"});
  b.Node("Mul", {"he", "half"}, {"ffn"});
  b.Node("Gemm", {"a", "gw"}, {"g"});
  testing::SetStringAttr(b.Node("Gelu", {"g"}, {"gemm"}), "approximate",
                         "tanh");
  OptimizerOptions options = Only(&OptimizerOptions::activation_fusion);
  options.matmul_bias_fusion = true;
  options.gelu_fusion = true;
  auto ops = CompareAndGetOps(b, options,
                              {{{2, 3, 4}, testing::RandomFloats(24, 34)},
                               {{3, 4}, testing::RandomFloats(12, 35)}});
  EXPECT_THAT(ops, ElementsAre("FusedMatMul", "FusedGemm"));
}

int CountOf(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

// SiLU as exporters write it (EfficientNet), Mul(x, Sigmoid(x)) in either
// operand order, and HardSwish / HardSigmoid (MobileNetV3) fuse into the
// convolution; a Sigmoid whose input has a third reader does not.
TEST(GraphOptimizerTest, SiluHardSwishAndHardSigmoidFuseIntoConv) {
  OnnxModelBuilder b(14);
  b.Input("x", {1, 2, 5, 5});
  b.Output("silu").Output("silu2").Output("hswish").Output("hsig");
  b.Output("kept").Output("side");
  for (int i = 0; i < 5; ++i)
    b.FloatInitializer("w" + std::to_string(i), {3, 2, 3, 3},
                       testing::RandomFloats(54, 20 + i));
  b.Node("Conv", {"x", "w0"}, {"c0"});
  b.Node("Sigmoid", {"c0"}, {"s0"});
  b.Node("Mul", {"c0", "s0"}, {"silu"});
  b.Node("Conv", {"x", "w1"}, {"c1"});
  b.Node("Sigmoid", {"c1"}, {"s1"});
  b.Node("Mul", {"s1", "c1"}, {"silu2"});
  b.Node("Conv", {"x", "w2"}, {"c2"});
  b.Node("HardSwish", {"c2"}, {"hswish"});
  b.Node("Conv", {"x", "w3"}, {"c3"});
  auto& hs = b.Node("HardSigmoid", {"c3"}, {"hsig"});
  testing::SetFloatAttr(hs, "alpha", 0.25f);
  testing::SetFloatAttr(hs, "beta", 0.4f);
  b.Node("Conv", {"x", "w4"}, {"c4"});  // c4 also read by Neg: no fusion
  b.Node("Sigmoid", {"c4"}, {"s4"});
  b.Node("Mul", {"c4", "s4"}, {"kept"});
  b.Node("Neg", {"c4"}, {"side"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::activation_fusion),
                              {{{1, 2, 5, 5}, testing::RandomFloats(50, 30)}});
  EXPECT_EQ(CountOf(ops, "FusedConv"), 4);
  EXPECT_EQ(CountOf(ops, "Conv"), 1);
  EXPECT_EQ(CountOf(ops, "Sigmoid"), 1);
  EXPECT_EQ(CountOf(ops, "Mul"), 1);
  EXPECT_EQ(CountOf(ops, "HardSwish"), 0);
  EXPECT_EQ(CountOf(ops, "HardSigmoid"), 0);
}

// A ResNet block: conv+relu, conv, a 1x1 shortcut conv, Add (or Sum), Relu,
// then global pooling into y.
void AddResNetBlock(OnnxModelBuilder& b, const char* sum_op) {
  b.Input("x", {2, 4, 6, 6}).Output("y");
  b.FloatInitializer("w1", {8, 4, 3, 3}, testing::RandomFloats(288, 20));
  b.FloatInitializer("w2", {8, 8, 3, 3}, testing::RandomFloats(576, 21));
  b.FloatInitializer("ws", {8, 4, 1, 1}, testing::RandomFloats(32, 22));
  b.FloatInitializer("b1", {8}, testing::RandomFloats(8, 23));
  testing::SetIntsAttr(b.Node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads",
                       {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"});
  testing::SetIntsAttr(b.Node("Conv", {"r1", "w2"}, {"c2"}), "pads",
                       {1, 1, 1, 1});
  b.Node("Conv", {"x", "ws"}, {"s"});
  b.Node(sum_op, {"c2", "s"}, {"sum"});
  b.Node("Relu", {"sum"}, {"r2"});
  b.Node("GlobalAveragePool", {"r2"}, {"y"});
}

// The block's sum and the Relu after it become part of the second conv; the
// shortcut conv stays a Conv. (The shortcut dies at the sum, so the plan
// writes the sum over it: the in-place path.)
TEST(GraphOptimizerTest, ResidualAddAndReluFuseIntoTheConv) {
  for (const char* sum_op : {"Add", "Sum"}) {
    OnnxModelBuilder b(13);
    AddResNetBlock(b, sum_op);
    OptimizerOptions options = Only(&OptimizerOptions::residual_fusion);
    options.activation_fusion = true;
    auto ops = CompareAndGetOps(
        b, options, {{{2, 4, 6, 6}, testing::RandomFloats(288, 24)}});
    EXPECT_THAT(ops, UnorderedElementsAre("FusedConv", "FusedConv", "Conv",
                                          "GlobalAveragePool"))
        << sum_op;
  }
}

// A residual read again after the sum ("r") is copied, not written over;
// and a residual that broadcasts ([1, 8, 1, 1]) and one that
// broadcasts the convolution's result ([2, 8, 6, 6] against [1, 8, 6, 6])
// give Add's results too.
TEST(GraphOptimizerTest, ResidualThatLivesOnOrBroadcasts) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 4, 6, 6})
      .Input("z", {1, 8, 1, 1})
      .Input("big", {2, 8, 6, 6});
  b.Input("x8", {1, 8, 6, 6});
  b.Output("y").Output("again").Output("wide").Output("same").Output("r2");
  b.FloatInitializer("w4", {8, 4, 1, 1}, testing::RandomFloats(32, 46));
  b.Node("Relu", {"x8"}, {"r"});
  b.Node("Conv", {"x", "w4"}, {"c4"});
  b.Node("Add", {"c4", "r"}, {"same"});
  b.Node("Mul", {"r", "r"}, {"r2"});
  b.FloatInitializer("w", {8, 4, 1, 1}, testing::RandomFloats(32, 40));
  b.FloatInitializer("w2", {8, 4, 1, 1}, testing::RandomFloats(32, 41));
  b.FloatInitializer("w3", {8, 4, 1, 1}, testing::RandomFloats(32, 42));
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Relu", {"big"}, {"kept"});
  b.Node("Conv", {"x", "w2"}, {"c2"});
  b.Node("Add", {"c2", "z"}, {"y"});
  b.Node("Add", {"kept", "c"}, {"wide"});
  b.Node("Mul", {"kept", "kept"}, {"again"});
  b.Node("Conv", {"x", "w3"}, {"unused"});
  OptimizerOptions options = Only(&OptimizerOptions::residual_fusion);
  auto ops = CompareAndGetOps(b, options,
                              {{{1, 4, 6, 6}, testing::RandomFloats(144, 43)},
                               {{1, 8, 1, 1}, testing::RandomFloats(8, 44)},
                               {{2, 8, 6, 6}, testing::RandomFloats(576, 45)},
                               {{1, 8, 6, 6}, testing::RandomFloats(288, 47)}});
  EXPECT_EQ(CountOf(ops, "Add"), 0) << ::testing::PrintToString(ops);
}

// With every pass on, the fused block runs in NHWC: one Transpose in, one
// out, and the residual (another convolution's result) is transposed too.
TEST(GraphOptimizerTest, ResidualConvsRunChannelsLast) {
  OnnxModelBuilder b(13);
  AddResNetBlock(b, "Add");
  auto ops = CompareAndGetOps(b, OptimizerOptions{},
                              {{{2, 4, 6, 6}, testing::RandomFloats(288, 24)}});
  EXPECT_EQ(CountOf(ops, "Transpose"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOf(ops, "FusedConv"), 3);
  EXPECT_EQ(CountOf(ops, "Add"), 0);
}

// Without residual fusion, channels last keeps every value between the
// convolutions of AddResNetBlock's block in NHWC: one Transpose in (shared by
// both convolutions reading x), one out (before the pooling, which reads NCHW).
TEST(GraphOptimizerTest, ChannelsLastLeavesOneTransposeInAndOneOut) {
  OnnxModelBuilder b(13);
  AddResNetBlock(b, "Add");
  OptimizerOptions options = Only(&OptimizerOptions::channels_last);
  options.activation_fusion = true;
  auto ops = CompareAndGetOps(b, options,
                              {{{2, 4, 6, 6}, testing::RandomFloats(288, 24)}});
  EXPECT_EQ(CountOf(ops, "Transpose"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOf(ops, "FusedConv"), 3);
}

// ShuffleNet's unit: grouped 1x1 conv, channel shuffle (Reshape, Transpose,
// Reshape; batch entries 0 and -1 as batchable exports write them), a
// depthwise 3x3 conv, a grouped 1x1 conv, the residual Add and Relu. Every
// convolution runs NHWC and so does the shuffle: one Transpose in, one out,
// and the shuffle's own.
TEST(GraphOptimizerTest, ChannelsLastTakesGroupedConvsAndTheShuffle) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 8, 5, 5}).Output("y");
  b.FloatInitializer("g1", {8, 2, 1, 1}, testing::RandomFloats(16, 50));
  b.FloatInitializer("dw", {8, 1, 3, 3}, testing::RandomFloats(72, 51));
  b.FloatInitializer("g2", {8, 2, 1, 1}, testing::RandomFloats(16, 52));
  b.Int64Initializer("split", {5}, {0, 4, 2, 5, 5});
  b.Int64Initializer("merge", {4}, {-1, 8, 5, 5});
  testing::SetIntAttr(b.Node("Conv", {"x", "g1"}, {"a"}), "group", 4);
  b.Node("Relu", {"a"}, {"ar"});
  b.Node("Reshape", {"ar", "split"}, {"s5"});
  testing::SetIntsAttr(b.Node("Transpose", {"s5"}, {"t5"}), "perm",
                       {0, 2, 1, 3, 4});
  b.Node("Reshape", {"t5", "merge"}, {"shuffled"});
  auto& dw = b.Node("Conv", {"shuffled", "dw"}, {"d"});
  testing::SetIntAttr(dw, "group", 8);
  testing::SetIntsAttr(dw, "pads", {1, 1, 1, 1});
  testing::SetIntAttr(b.Node("Conv", {"d", "g2"}, {"c"}), "group", 4);
  b.Node("Add", {"c", "x"}, {"sum"});
  b.Node("Relu", {"sum"}, {"r"});
  b.Node("GlobalAveragePool", {"r"}, {"y"});
  auto ops = CompareAndGetOps(b, OptimizerOptions{},
                              {{{2, 8, 5, 5}, testing::RandomFloats(400, 53)}});
  EXPECT_EQ(CountOf(ops, "Transpose"), 3) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOf(ops, "FusedConv"), 3);
}

// DenseNet's pre-activation: Concat of two convolutions, BatchNormalization,
// Mul and Add by per-channel constants ([C, 1, 1], [1, C, 1, 1]) and a
// scalar, Relu, a convolution. All of it runs NHWC (one Transpose in and
// one out), and the Muls, the Add and the Relu fold into the
// BatchNormalization.
TEST(GraphOptimizerTest, ChannelsLastTakesBatchNormAndPerChannelConstants) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3, 5, 5}).Output("y");
  b.FloatInitializer("wa", {2, 3, 1, 1}, testing::RandomFloats(6, 60));
  b.FloatInitializer("wb", {3, 3, 1, 1}, testing::RandomFloats(9, 61));
  b.FloatInitializer("wc", {4, 5, 1, 1}, testing::RandomFloats(20, 62));
  std::vector<float> var = testing::RandomFloats(5, 63);
  for (float& v : var) v = std::fabs(v) + 0.1f;
  b.FloatInitializer("s", {5}, testing::RandomFloats(5, 64));
  b.FloatInitializer("bb", {5}, testing::RandomFloats(5, 65));
  b.FloatInitializer("m", {5}, testing::RandomFloats(5, 66));
  b.FloatInitializer("v", {5}, var);
  b.FloatInitializer("mul", {5, 1, 1}, testing::RandomFloats(5, 67));
  b.FloatInitializer("add", {1, 5, 1, 1}, testing::RandomFloats(5, 68));
  b.FloatInitializer("half", {}, {0.5f});
  b.Node("Conv", {"x", "wa"}, {"a"});
  b.Node("Conv", {"x", "wb"}, {"bc"});
  testing::SetIntAttr(b.Node("Concat", {"a", "bc"}, {"cat"}), "axis", 1);
  b.Node("BatchNormalization", {"cat", "s", "bb", "m", "v"}, {"bn"});
  b.Node("Mul", {"bn", "mul"}, {"scaled"});
  b.Node("Add", {"scaled", "add"}, {"shifted"});
  b.Node("Mul", {"shifted", "half"}, {"halved"});
  b.Node("Relu", {"halved"}, {"r"});
  b.Node("Conv", {"r", "wc"}, {"y"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                              {{{2, 3, 5, 5}, testing::RandomFloats(150, 69)}});
  EXPECT_THAT(ops, ElementsAre("Transpose", "FusedConv", "FusedConv", "Concat",
                               "BatchNormalization", "FusedConv", "Transpose"));
}

// Concat of two convolutions along channels runs in NHWC along the last
// axis; the convolution after it reads the result without a transpose.
TEST(GraphOptimizerTest, ChannelsLastRemapsConcatAxis) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 3, 5, 5}).Output("y");
  b.FloatInitializer("wa", {2, 3, 1, 1}, testing::RandomFloats(6, 25));
  b.FloatInitializer("wb", {4, 3, 3, 3}, testing::RandomFloats(108, 26));
  b.FloatInitializer("wc", {5, 6, 1, 1}, testing::RandomFloats(30, 27));
  b.Node("Conv", {"x", "wa"}, {"a"});
  testing::SetIntsAttr(b.Node("Conv", {"x", "wb"}, {"bb"}), "pads",
                       {1, 1, 1, 1});
  testing::SetIntAttr(b.Node("Concat", {"a", "bb"}, {"cat"}), "axis", 1);
  b.Node("Conv", {"cat", "wc"}, {"y"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                              {{{1, 3, 5, 5}, testing::RandomFloats(75, 28)}});
  EXPECT_EQ(CountOf(ops, "Transpose"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOf(ops, "Concat"), 1);
}

// A convolution whose neighbours all read NCHW keeps NCHW: two transposes
// would only replace the reorders around it.
TEST(GraphOptimizerTest, ChannelsLastLeavesAnIsolatedConvolutionAlone) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 3, 6, 6}).Output("y");
  b.FloatInitializer("w", {4, 3, 3, 3}, testing::RandomFloats(108, 30));
  b.Node("Conv", {"x", "w"}, {"c"});
  testing::SetIntAttr(b.Node("LRN", {"c"}, {"y"}), "size", 3);
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                              {{{1, 3, 6, 6}, testing::RandomFloats(108, 31)}});
  EXPECT_THAT(ops, ElementsAre("FusedConv", "LRN"));
}

// Pooling reads NHWC: a Conv -> MaxPool -> AveragePool -> GlobalMaxPool
// chain keeps one transpose in and one out, and gives NCHW pooling's values.
TEST(GraphOptimizerTest, ChannelsLastPools) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3, 9, 8}).Output("y");
  b.FloatInitializer("w", {4, 3, 3, 3}, testing::RandomFloats(108, 32));
  testing::SetIntsAttr(b.Node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  auto& max = b.Node("MaxPool", {"c"}, {"m"});
  testing::SetIntsAttr(max, "kernel_shape", {3, 3});
  testing::SetIntsAttr(max, "strides", {2, 2});
  testing::SetIntAttr(max, "ceil_mode", 1);
  auto& avg = b.Node("AveragePool", {"m"}, {"a"});
  testing::SetIntsAttr(avg, "kernel_shape", {2, 2});
  testing::SetIntsAttr(avg, "pads", {1, 1, 0, 1});
  b.Node("GlobalMaxPool", {"a"}, {"y"});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                              {{{2, 3, 9, 8}, testing::RandomFloats(432, 33)}});
  EXPECT_THAT(ops, ElementsAre("Transpose", "FusedConv", "MaxPool",
                               "AveragePool", "GlobalMaxPool", "Transpose"));
}

// The dynamo exporter's global pooling, ReduceMean over the spatial axes
// (an attribute before opset 18, an input from it), runs channels-last as
// a GlobalAveragePool; SiLU's Mul of two NHWC values keeps them NHWC.
TEST(GraphOptimizerTest, ChannelsLastTakesSpatialReduceMeanAndSilu) {
  for (int opset : {13, 18}) {
    SCOPED_TRACE(opset);
    OnnxModelBuilder b(opset);
    b.Input("x", {2, 3, 6, 5}).Output("y");
    b.FloatInitializer("w", {4, 3, 3, 3}, testing::RandomFloats(108, 40));
    b.FloatInitializer("w2", {4, 4, 1, 1}, testing::RandomFloats(16, 41));
    b.Node("Conv", {"x", "w"}, {"c"});
    b.Node("Sigmoid", {"c"}, {"s"});
    b.Node("Mul", {"c", "s"}, {"silu"});
    b.Node("Conv", {"silu", "w2"}, {"c2"});
    if (opset >= 18) {
      b.Int64Initializer("axes", {2}, {-1, -2});
      b.Node("ReduceMean", {"c2", "axes"}, {"y"});
    } else {
      testing::SetIntsAttr(b.Node("ReduceMean", {"c2"}, {"y"}), "axes", {2, 3});
    }
    auto ops =
        CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                         {{{2, 3, 6, 5}, testing::RandomFloats(180, 42)}});
    EXPECT_THAT(ops,
                ElementsAre("Transpose", "FusedConv", "Sigmoid", "Mul",
                            "FusedConv", "GlobalAveragePool", "Transpose"));
  }
}

// A transpose and its inverse cancel; when the second one's result is a
// graph output, it becomes an Identity so the output keeps its name.
TEST(GraphOptimizerTest, InverseTransposesCancel) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 2, 3, 4}).Output("y");
  testing::SetIntsAttr(b.Node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 3, 1});
  testing::SetIntsAttr(b.Node("Transpose", {"t"}, {"y"}), "perm", {0, 3, 1, 2});
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::channels_last),
                              {{{1, 2, 3, 4}, testing::RandomFloats(24, 29)}});
  EXPECT_THAT(ops, ElementsAre("Identity"));
}

// x -> ReduceMean -> Sub -> Pow|Mul -> ReduceMean -> Add eps -> Sqrt -> Div
// -> Mul gamma -> Add beta, as PyTorch exports LayerNorm below opset 17.
void AddDecomposedLayerNorm(OnnxModelBuilder& b, bool square_with_mul) {
  b.Input("x", {2, 3, 8}).Output("y");
  b.FloatInitializer("two", {}, {2.0f});
  b.FloatInitializer("eps", {}, {1e-5f});
  b.FloatInitializer("gamma", {8}, testing::RandomFloats(8, 13));
  b.FloatInitializer("beta", {8}, testing::RandomFloats(8, 14));
  testing::SetIntsAttr(b.Node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  b.Node("Sub", {"x", "mean"}, {"d"});
  if (square_with_mul) {
    b.Node("Mul", {"d", "d"}, {"sq"});
  } else {
    b.Node("Pow", {"d", "two"}, {"sq"});
  }
  testing::SetIntsAttr(b.Node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  b.Node("Add", {"var", "eps"}, {"ve"});
  b.Node("Sqrt", {"ve"}, {"std"});
  b.Node("Div", {"d", "std"}, {"n"});
  b.Node("Mul", {"n", "gamma"}, {"ng"});
  b.Node("Add", {"ng", "beta"}, {"y"});
}

TEST(GraphOptimizerTest, DecomposedLayerNormBecomesOneNode) {
  for (bool square_with_mul : {false, true}) {
    OnnxModelBuilder b(13);
    AddDecomposedLayerNorm(b, square_with_mul);
    auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::layer_norm_fusion),
                                {{{2, 3, 8}, testing::RandomFloats(48, 15)}});
    EXPECT_THAT(ops, ElementsAre("LayerNormalization")) << square_with_mul;
  }
}

// Both orders PyTorch and TensorFlow exporters produce for the exact GELU.
TEST(GraphOptimizerTest, ErfGeluBecomesOneNode) {
  for (bool half_first : {false, true}) {
    OnnxModelBuilder b(13);
    b.Input("x", {4, 16}).Output("y");
    b.FloatInitializer("sqrt2", {}, {1.4142135f});
    b.FloatInitializer("one", {}, {1.0f});
    b.FloatInitializer("half", {}, {0.5f});
    b.Node("Div", {"x", "sqrt2"}, {"s"});
    b.Node("Erf", {"s"}, {"e"});
    b.Node("Add", {"e", "one"}, {"p"});
    if (half_first) {
      b.Node("Mul", {"x", "half"}, {"h"});
      b.Node("Mul", {"h", "p"}, {"y"});
    } else {
      b.Node("Mul", {"x", "p"}, {"xp"});
      b.Node("Mul", {"xp", "half"}, {"y"});
    }
    auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::gelu_fusion),
                                {{{4, 16}, testing::RandomFloats(64, 16)}});
    EXPECT_THAT(ops, ElementsAre("Gelu")) << half_first;
  }
}

// The optimized model's nodes' string attribute `name` ("" where absent).
std::vector<std::string> StringAttrs(const OnnxModelBuilder& builder,
                                     const OptimizerOptions& options,
                                     const std::string& name) {
  auto model = Model::LoadFromBytes(builder.Serialize(), {options});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  std::vector<std::string> values;
  for (const GraphNode& n : (*model)->graph().nodes) {
    absl::StatusOr<std::string> v = n.attributes.GetString(name, "");
    values.push_back(v.ok() ? *v : "");
  }
  return values;
}

// y = 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + c * x^3))), GPT-2's gelu_new
// (c = 0.044715; without the 0.5 when !with_half). Order 0 is what GPT-2's
// dynamo and TorchScript exports write: Mul(x, 0.5), Pow(x, 3), constants
// second, the 0.5 first. Order 1: x * (x * x), constants first, the 0.5
// last. Order 2: (x * x) * x, Add(cubic, x), the 0.5 first as Mul(0.5, x).
void AddTanhGelu(OnnxModelBuilder& b, const std::string& x,
                 const std::string& y, int order, float c = 0.044715f,
                 bool with_half = true) {
  b.FloatInitializer("three", {}, {3.0f});
  b.FloatInitializer("c", {}, {c});
  b.FloatInitializer("k", {}, {0.7978845608f});
  b.FloatInitializer("one", {}, {1.0f});
  b.FloatInitializer("half", {}, {0.5f});
  if (order == 0) {
    b.Node("Pow", {x, "three"}, {"x3"});
  } else {
    b.Node("Mul", {x, x}, {"x2"});
    b.Node("Mul",
           order == 1 ? std::vector<std::string>{x, "x2"}
                      : std::vector<std::string>{"x2", x},
           {"x3"});
  }
  if (order == 0) {
    b.Node("Mul", {"x3", "c"}, {"cx3"});
    b.Node("Add", {x, "cx3"}, {"s"});
    b.Node("Mul", {"s", "k"}, {"u"});
  } else {
    b.Node("Mul", {"c", "x3"}, {"cx3"});
    b.Node("Add", {"cx3", x}, {"s"});
    b.Node("Mul", {"k", "s"}, {"u"});
  }
  b.Node("Tanh", {"u"}, {"t"});
  if (order == 1) {
    b.Node("Add", {"one", "t"}, {"p"});
    if (!with_half) {
      b.Node("Mul", {"p", x}, {y});
      return;
    }
    b.Node("Mul", {"p", x}, {"xp"});
    b.Node("Mul", {"half", "xp"}, {y});
    return;
  }
  b.Node("Add", {"t", "one"}, {"p"});
  if (!with_half) {
    b.Node("Mul", {x, "p"}, {y});
    return;
  }
  if (order == 0) {
    b.Node("Mul", {x, "half"}, {"xh"});
    b.Node("Mul", {"xh", "p"}, {y});
  } else {
    b.Node("Mul", {"half", x}, {"xh"});
    b.Node("Mul", {"p", "xh"}, {y});
  }
}

// MatMul + bias + 0.5 * x * (1 + Tanh(...)) in the orders AddTanhGelu
// writes.
OnnxModelBuilder TanhGeluFfn(int order, float c = 0.044715f,
                             bool with_half = true) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 3, 4}).Output("y");
  b.FloatInitializer("w", {4, 6}, testing::RandomFloats(24, 41));
  b.FloatInitializer("bias", {6}, testing::RandomFloats(6, 42));
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"h"});
  AddTanhGelu(b, "h", "y", order, c, with_half);
  return b;
}

// Inputs in [-3, 3], so that h reaches both GELU tails.
std::vector<HostTensor> TanhGeluInputs() {
  std::vector<float> x = testing::RandomFloats(24, 43);
  for (float& v : x) v *= 3.0f;
  return {{{2, 3, 4}, x}};
}

// GPT-2's tanh GELU becomes one Gelu with approximate="tanh", which the
// activation pass then moves into the MatMul + bias as GeluTanh. Outputs
// as the unfused graph's.
TEST(GraphOptimizerTest, TanhGeluFusesIntoItsMatMul) {
  OptimizerOptions ffn = Only(&OptimizerOptions::activation_fusion);
  ffn.matmul_bias_fusion = true;
  ffn.gelu_fusion = true;
  for (int order : {0, 1, 2}) {
    const OnnxModelBuilder b = TanhGeluFfn(order);
    EXPECT_THAT(CompareAndGetOps(b, Only(&OptimizerOptions::gelu_fusion),
                                 TanhGeluInputs()),
                ElementsAre("MatMul", "Add", "Gelu"))
        << order;
    EXPECT_THAT(
        StringAttrs(b, Only(&OptimizerOptions::gelu_fusion), "approximate"),
        ElementsAre("", "", "tanh"))
        << order;
    EXPECT_THAT(CompareAndGetOps(b, ffn, TanhGeluInputs()),
                ElementsAre("FusedMatMul"))
        << order;
    EXPECT_THAT(StringAttrs(b, ffn, "activation"), ElementsAre("GeluTanh"))
        << order;
  }
}

// Near misses of the tanh GELU (0.04 for 0.044715; no 0.5) stay as written
// with every pass on, and compute as the unoptimized graph.
TEST(GraphOptimizerTest, PerturbedTanhGeluIsNotFused) {
  for (int order : {0, 1, 2}) {
    for (bool with_half : {true, false}) {
      const float c = with_half ? 0.04f : 0.044715f;
      const OnnxModelBuilder b = TanhGeluFfn(order, c, with_half);
      const std::vector<std::string> ops =
          CompareAndGetOps(b, OptimizerOptions{}, TanhGeluInputs());
      EXPECT_EQ(CountOf(ops, "Gelu"), 0) << order << with_half;
      EXPECT_EQ(CountOf(ops, "Tanh"), 1) << order << with_half;
      EXPECT_EQ(CountOf(ops, "FusedMatMul"), 1) << order << with_half;
      EXPECT_THAT(StringAttrs(b, OptimizerOptions{}, "activation"),
                  ::testing::Each(""))
          << order << with_half;
    }
  }
}

// CLIP's quick GELU after its dense layer, x * Sigmoid(1.702 x) with the
// scale's Mul in either operand order: the MatMul + bias takes it as Silu
// with alpha 1.702. Near misses stay as written: the outer Mul of another
// value, a scale that is not a constant, and x read a third time. Outputs
// as the unoptimized graph's either way.
TEST(GraphOptimizerTest, QuickGeluFusesIntoItsMatMulAsScaledSilu) {
  OptimizerOptions ffn = Only(&OptimizerOptions::activation_fusion);
  ffn.matmul_bias_fusion = true;
  enum Variant {
    kQuickGelu,
    kScaleFirst,
    kOtherValue,
    kVariableScale,
    kThirdReader
  };
  for (Variant v :
       {kQuickGelu, kScaleFirst, kOtherValue, kVariableScale, kThirdReader}) {
    OnnxModelBuilder b(17);
    b.Input("x", {3, 4});
    b.Input("c_in", {});
    b.Output("y");
    b.FloatInitializer("w", {4, 6}, testing::RandomFloats(24, 71));
    b.FloatInitializer("bias", {6}, testing::RandomFloats(6, 72));
    b.FloatInitializer("c", {}, {1.702f});
    b.FloatInitializer("other", {6}, testing::RandomFloats(6, 73));
    b.Node("MatMul", {"x", "w"}, {"m"});
    b.Node("Add", {"m", "bias"}, {"h"});
    const std::string scale = v == kVariableScale ? "c_in" : "c";
    if (v == kScaleFirst) {
      b.Node("Mul", {scale, "h"}, {"hs"});
    } else {
      b.Node("Mul", {"h", scale}, {"hs"});
    }
    b.Node("Sigmoid", {"hs"}, {"g"});
    if (v == kOtherValue) {
      b.Node("Add", {"h", "other"}, {"h2"});
      b.Node("Mul", {"h2", "g"}, {"y"});
    } else {
      b.Node("Mul", {"h", "g"}, {"y"});
    }
    if (v == kThirdReader) {
      b.Output("side");
      b.Node("Neg", {"h"}, {"side"});
    }
    const std::vector<HostTensor> inputs = {
        {{3, 4}, testing::RandomFloats(12, 74)}, {{}, {1.702f}}};
    const std::vector<std::string> ops = CompareAndGetOps(b, ffn, inputs);
    const bool fuses = v == kQuickGelu || v == kScaleFirst;
    EXPECT_EQ(CountOf(ops, "Sigmoid"), fuses ? 0 : 1) << v;
    EXPECT_EQ(CountOf(ops, "FusedMatMul"), 1) << v;
    const std::vector<std::string> acts = StringAttrs(b, ffn, "activation");
    EXPECT_EQ(CountOf(acts, "Silu"), fuses ? 1 : 0) << v;
    if (!fuses) continue;
    auto model = Model::LoadFromBytes(b.Serialize(), {ffn});
    ASSERT_TRUE(model.ok()) << model.status();
    for (const GraphNode& n : (*model)->graph().nodes) {
      if (n.op_type != "FusedMatMul") continue;
      EXPECT_EQ(*n.attributes.GetFloat("activation_alpha", 0.0f), 1.702f);
    }
  }
}

// GPT-2's Conv1D as exported: Reshape -> Gemm (bias) -> Reshape -> GELU.
// The GELU is elementwise, so it moves into the Gemm across the Reshape,
// which then writes the GELU's output. `second_reader`: the reshaped product
// is also a graph output, so nothing fuses.
OnnxModelBuilder Conv1dFfn(bool second_reader) {
  OnnxModelBuilder b(20);
  b.Input("x", {2, 3, 4});
  b.Output("y");
  if (second_reader) b.Output("r");
  b.FloatInitializer("w", {4, 6}, testing::RandomFloats(24, 61));
  b.FloatInitializer("bias", {6}, testing::RandomFloats(6, 62));
  b.Int64Initializer("flat", {2}, {-1, 4});
  b.Int64Initializer("back", {3}, {2, 3, 6});
  b.Node("Reshape", {"x", "flat"}, {"x2"});
  b.Node("Gemm", {"x2", "w", "bias"}, {"g"});
  b.Node("Reshape", {"g", "back"}, {"r"});
  testing::SetStringAttr(b.Node("Gelu", {"r"}, {"y"}), "approximate", "tanh");
  return b;
}

TEST(GraphOptimizerTest, GeluMovesIntoItsGemmAcrossAReshape) {
  const OptimizerOptions options = Only(&OptimizerOptions::activation_fusion);
  const std::vector<HostTensor> x = {
      {{2, 3, 4}, testing::RandomFloats(24, 63)}};
  EXPECT_THAT(CompareAndGetOps(Conv1dFfn(false), options, x),
              ElementsAre("Reshape", "FusedGemm", "Reshape"));
  EXPECT_THAT(StringAttrs(Conv1dFfn(false), options, "activation"),
              ElementsAre("", "GeluTanh", ""));
  EXPECT_THAT(CompareAndGetOps(Conv1dFfn(true), options, x),
              ElementsAre("Reshape", "Gemm", "Reshape", "Gelu"));
}

TEST(GraphOptimizerTest, DeadNodesAndTheirInitializersAreRemoved) {
  OnnxModelBuilder b(13);
  b.Input("x", {3}).Input("unused", {3}).Output("y");
  b.FloatInitializer("k", {3}, {1, 2, 3});
  b.Node("Relu", {"x"}, {"y"});
  b.Node("Mul", {"x", "k"}, {"dead1"});
  b.Node("Sigmoid", {"dead1"}, {"dead2"});
  const std::string bytes = b.Serialize();
  auto model =
      Model::LoadFromBytes(bytes, {Only(&OptimizerOptions::dead_node_removal)});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(OpTypes(**model), ElementsAre("Relu"));
  // The signature keeps the unused graph input.
  ASSERT_EQ((*model)->signature().inputs.size(), 2u);
  EXPECT_EQ((*model)->signature().inputs[1].name, "unused");
  auto ops = CompareAndGetOps(b, Only(&OptimizerOptions::dead_node_removal),
                              {{{3}, {-1, 0, 1}}, {{3}, {0, 0, 0}}});
  EXPECT_THAT(ops, ElementsAre("Relu"));
}

}  // namespace
}  // namespace coalesce
