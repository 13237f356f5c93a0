// Patch convolutions as dense layers (graph_optimizer.h, pass 2b): a
// convolution whose stride is its kernel becomes patches, one FusedMatMul
// and a transpose back, computing what the Conv computes; any other
// convolution, or one whose input's dims are not declared, stays a Conv.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/model.h"
#include "engine/optimizer/graph_optimizer.h"
#include "engine/testing/onnx_model_builder.h"
#include "engine/testing/optimizer_compare.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

constexpr int64_t kN = 2, kC = 3, kH = 8, kW = 12, kM = 6;

struct ConvForm {
  int64_t kernel = 4, stride = 4, pad = 0, group = 1, dilation = 1;
  bool bias = true;
  bool cast_first = false;  // CLIP: the pixels go through a Cast
  bool declared = true;     // x's C, H and W declared
};

// y = Conv(x) in `form`, then ViT's flattening: Reshape to [N, M, P].
OnnxModelBuilder PatchModel(const ConvForm& form) {
  OnnxModelBuilder b(17);
  b.Input("x", form.declared ? Shape{-1, kC, kH, kW} : Shape{-1, -1, -1, -1});
  const int64_t c = kC / form.group;
  b.FloatInitializer(
      "w", {kM, c, form.kernel, form.kernel},
      testing::RandomFloats(kM * c * form.kernel * form.kernel, 3));
  std::vector<std::string> inputs = {"x", "w"};
  if (form.bias) {
    b.FloatInitializer("b", {kM}, testing::RandomFloats(kM, 4));
    inputs.push_back("b");
  }
  if (form.cast_first) {
    testing::SetIntAttr(b.Node("Cast", {"x"}, {"xf"}), "to", 1);
    inputs[0] = "xf";
  }
  onnx::NodeProto& conv = b.Node("Conv", inputs, {"y"});
  testing::SetIntsAttr(conv, "kernel_shape", {form.kernel, form.kernel});
  testing::SetIntsAttr(conv, "strides", {form.stride, form.stride});
  testing::SetIntsAttr(conv, "pads", {form.pad, form.pad, form.pad, form.pad});
  testing::SetIntsAttr(conv, "dilations", {form.dilation, form.dilation});
  testing::SetIntAttr(conv, "group", form.group);
  b.Int64Initializer("flat", {3}, {0, kM, -1});
  b.Node("Reshape", {"y", "flat"}, {"z"});
  b.Output("z");
  return b;
}

int Count(const Model& model, const std::string& op) {
  return static_cast<int>(
      std::count_if(model.graph().nodes.begin(), model.graph().nodes.end(),
                    [&](const GraphNode& n) { return n.op_type == op; }));
}

std::shared_ptr<const Model> LoadForDeviceAndCompare(const ConvForm& form) {
  return testing::LoadOptimizedAndCompare(
      PatchModel(form).Serialize(), ModelOptions::ForDevice(),
      {{{kN, kC, kH, kW}, testing::RandomFloats(kN * kC * kH * kW, 1)}});
}

TEST(PatchConvolutionTest, APatchConvolutionIsOneDenseLayer) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "with bias" : "without bias");
    auto model = LoadForDeviceAndCompare({.bias = bias});
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(Count(*model, "Conv") + Count(*model, "FusedConv"), 0);
    EXPECT_EQ(Count(*model, "FusedMatMul") + Count(*model, "MatMul"), 1);
    EXPECT_EQ(Count(*model, "Add"), 0) << "the bias is the GEMM's";
    EXPECT_EQ(Count(*model, "Transpose"), 2);
  }
}

TEST(PatchConvolutionTest, PixelsCastFirstAreFollowedToTheirDeclaredDims) {
  auto model = LoadForDeviceAndCompare({.cast_first = true});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Count(*model, "Conv"), 0);
}

TEST(PatchConvolutionTest, OtherConvolutionsStayConvolutions) {
  const ConvForm forms[] = {
      {.kernel = 4, .stride = 2},            // overlapping windows
      {.kernel = 4, .stride = 4, .pad = 1},  // padded
      {.kernel = 3, .stride = 3},            // 8 and 12 not multiples of 3
      {.kernel = 2, .stride = 2, .dilation = 2},
      {.declared = false},         // C, H, W unknown at load
      {.kernel = 1, .stride = 1},  // a 1x1 convolution
  };
  for (const ConvForm& form : forms) {
    SCOPED_TRACE(absl::StrCat("kernel ", form.kernel, " stride ", form.stride,
                              " pad ", form.pad, " dilation ", form.dilation,
                              form.declared ? "" : " undeclared"));
    auto model = LoadForDeviceAndCompare(form);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(Count(*model, "Conv") + Count(*model, "FusedConv"), 1);
  }
}

TEST(PatchConvolutionTest, ManyChannelsStayConvolutions) {
  // A CNN's 2x2 downsampling at stride 2 over 8 channels.
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8, 4, 6});
  b.FloatInitializer("w", {4, 8, 2, 2}, testing::RandomFloats(128, 5));
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w"}, {"y"});
  testing::SetIntsAttr(conv, "kernel_shape", {2, 2});
  testing::SetIntsAttr(conv, "strides", {2, 2});
  b.Output("y");
  auto model = testing::LoadOptimizedAndCompare(
      b.Serialize(), ModelOptions::ForDevice(),
      {{{2, 8, 4, 6}, testing::RandomFloats(2 * 8 * 4 * 6, 6)}});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Count(*model, "Conv"), 1);
}

TEST(PatchConvolutionTest, GroupedPatchConvolutionsStay) {
  // group 3 over 3 channels: depthwise patches, not one dense layer.
  OnnxModelBuilder b = PatchModel({.group = 3});
  auto model = testing::LoadOptimizedAndCompare(
      b.Serialize(), ModelOptions::ForDevice(),
      {{{kN, kC, kH, kW}, testing::RandomFloats(kN * kC * kH * kW, 2)}});
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Count(*model, "Conv"), 1);
}

TEST(PatchConvolutionTest, TheCpuKeepsItsConvolution) {
  auto model = Model::LoadFromBytes(PatchModel({}).Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Count(**model, "Conv") + Count(**model, "FusedConv"), 1);
}

}  // namespace
}  // namespace coalesce
