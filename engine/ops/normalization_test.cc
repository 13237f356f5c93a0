#include <cmath>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// LayerNormalization of x [2,3,4] over dims [axis, 3); scale/bias flattened
// over the normalized elements (or one element).
void Check(int64_t axis_attr, int64_t axis, const Shape& param_shape,
           bool with_bias, float epsilon_attr) {
  const Shape x_shape = {2, 3, 4};
  testing::OnnxModelBuilder builder(17);
  builder.Input("x", x_shape).Output("y");
  const auto scale = testing::RandomFloats(Count(param_shape), 11);
  const auto bias = testing::RandomFloats(Count(param_shape), 12);
  builder.FloatInitializer("scale", param_shape, scale);
  std::vector<std::string> inputs = {"x", "scale"};
  if (with_bias) {
    builder.FloatInitializer("bias", param_shape, bias);
    inputs.push_back("bias");
  }
  onnx::NodeProto& node = builder.Node("LayerNormalization", inputs, {"y"});
  if (axis_attr > -100) testing::SetIntAttr(node, "axis", axis_attr);
  if (epsilon_attr > 0) testing::SetFloatAttr(node, "epsilon", epsilon_attr);
  const double epsilon = epsilon_attr > 0 ? epsilon_attr : 1e-5;
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto x = testing::RandomFloats(24, 13);
  for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 3 + (i % 5);
  auto out = testing::RunModelOnce(*model, {HostTensor{x_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, x_shape);
  int64_t cols = 1;
  for (int64_t d = axis; d < 3; ++d) cols *= x_shape[d];
  const int64_t rows = 24 / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c)
      var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t p = scale.size() == 1 ? 0 : c;
      const double want =
          (x[r * cols + c] - mean) / std::sqrt(var + epsilon) * scale[p] +
          (with_bias ? bias[p] : 0.0);
      ASSERT_NEAR((*out)[0].data[r * cols + c], want, 1e-5)
          << "axis " << axis << " at " << r << "," << c;
    }
  }
}

TEST(LayerNormOpTest, DefaultAxisIsLast) {
  Check(/*axis_attr=*/-1000, /*axis=*/2, {4}, /*with_bias=*/true, 0);
  Check(-1000, 2, {4}, /*with_bias=*/false, 0);
}

TEST(LayerNormOpTest, AxisAndEpsilon) {
  Check(1, 1, {3, 4}, true, 1e-2f);
  Check(-2, 1, {3, 4}, false, 0);
  Check(0, 0, {2, 3, 4}, true, 0);
  Check(-1, 2, {1, 4}, true, 0.5f);  // leading 1s allowed
}

TEST(LayerNormOpTest, ScalarScaleAndBias) { Check(1, 1, {1}, true, 0); }

TEST(LayerNormOpTest, MismatchedScaleRejected) {
  testing::OnnxModelBuilder builder(17);
  builder.Input("x", {2, 4}).Output("y");
  builder.FloatInitializer("scale", {3}, {1, 1, 1});
  builder.Node("LayerNormalization", {"x", "scale"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 4}, std::vector<float>(8)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LayerNormOpTest, MeanAndInvStdDevOutputsRejectedAtLoad) {
  for (const std::vector<std::string>& outputs :
       {std::vector<std::string>{"y", "mean"},
        std::vector<std::string>{"y", "", "inv_std"}}) {
    testing::OnnxModelBuilder builder(17);
    builder.Input("x", {2, 4}).Output("y");
    builder.FloatInitializer("scale", {4}, {1, 1, 1, 1});
    builder.Node("LayerNormalization", {"x", "scale"}, outputs);
    auto model = builder.Load();
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("not supported"), std::string::npos)
        << model.status();
  }
}

TEST(LayerNormOpTest, EmptyOptionalOutputsAccepted) {
  testing::OnnxModelBuilder builder(17);
  builder.Input("x", {1, 2}).Output("y");
  builder.FloatInitializer("scale", {2}, {1, 1});
  builder.Node("LayerNormalization", {"x", "scale"}, {"y", "", ""});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{1, 2}, {1, 3}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR((*out)[0].data[0], -1.0, 1e-4);
  EXPECT_NEAR((*out)[0].data[1], 1.0, 1e-4);
}

}  // namespace
}  // namespace coalesce
