#include <cmath>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(BatchNormOpTest, MatchesFormulaPerChannel) {
  const Shape x_shape = {2, 3, 4, 5};
  const auto x = testing::RandomFloats(120, 21);
  const std::vector<float> scale = {0.5f, -1.0f, 2.0f};
  const std::vector<float> bias = {0.1f, 0.2f, -0.3f};
  const std::vector<float> mean = {0.05f, -0.2f, 0.4f};
  const std::vector<float> var = {1.0f, 0.25f, 4.0f};
  for (int64_t opset : {9, 15}) {
    testing::OnnxModelBuilder b(opset);
    b.Input("x", x_shape).Output("y");
    b.FloatInitializer("s", {3}, scale).FloatInitializer("b", {3}, bias);
    b.FloatInitializer("m", {3}, mean).FloatInitializer("v", {3}, var);
    auto& node = b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
    testing::SetFloatAttr(node, "epsilon", 1e-3f);
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelOnce(*model, {{x_shape, x}});
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t c = (i / 20) % 3;
      const double want =
          (x[i] - mean[c]) / std::sqrt(double(var[c]) + 1e-3) * scale[c] +
          bias[c];
      ASSERT_NEAR((*out)[0].data[i], want, 1e-5) << i << " opset " << opset;
    }
  }
}

// channels_last=1: X is [N, H, W, C]; 300 channels span two of the
// kernel's channel blocks, and 2 * 5 * 7 positions more than one row chunk.
TEST(BatchNormOpTest, ChannelsLastMatchesFormulaPerChannel) {
  const int64_t channels = 300;
  const Shape x_shape = {2, 5, 7, channels};
  const auto x = testing::RandomFloats(70 * channels, 22);
  const auto scale = testing::RandomFloats(channels, 23);
  const auto bias = testing::RandomFloats(channels, 24);
  const auto mean = testing::RandomFloats(channels, 25);
  std::vector<float> var = testing::RandomFloats(channels, 26);
  for (float& v : var) v = std::fabs(v) + 0.1f;
  testing::OnnxModelBuilder b(15);
  b.Input("x", x_shape).Output("y");
  b.FloatInitializer("s", {channels}, scale);
  b.FloatInitializer("b", {channels}, bias);
  b.FloatInitializer("m", {channels}, mean);
  b.FloatInitializer("v", {channels}, var);
  auto& node = b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  testing::SetIntAttr(node, "channels_last", 1);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{x_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % channels;
    const double want =
        (x[i] - mean[c]) / std::sqrt(double(var[c]) + 1e-5) * scale[c] +
        bias[c];
    ASSERT_NEAR((*out)[0].data[i], want, 1e-4) << i;
  }
}

TEST(BatchNormOpTest, TrainingModeIsRefusedAtLoad) {
  testing::OnnxModelBuilder b(15);
  b.Input("x", {1, 2}).Output("y");
  for (const char* name : {"s", "b", "m", "v"})
    b.FloatInitializer(name, {2}, {1.0f, 1.0f});
  auto& node = b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  testing::SetIntAttr(node, "training_mode", 1);
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
      << model.status();
  EXPECT_NE(model.status().message().find("training_mode"), std::string::npos);
}

TEST(BatchNormOpTest, WrongParameterShapeNamesIt) {
  testing::OnnxModelBuilder b(15);
  b.Input("x", {1, 2, 3}).Output("y");
  b.FloatInitializer("s", {3}, {1, 1, 1});
  for (const char* name : {"b", "m", "v"})
    b.FloatInitializer(name, {2}, {1, 1});
  b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out =
      testing::RunModelOnce(*model, {{{1, 2, 3}, std::vector<float>(6)}});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_NE(out.status().message().find("scale [3]"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace coalesce
