#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

absl::StatusOr<std::vector<HostTensor>> RunReshape(
    const Shape& in, const std::vector<int64_t>& spec, int64_t allow_zero,
    bool via_constant) {
  testing::OnnxModelBuilder builder(/*opset=*/14);
  builder.Input("x", in).Output("y");
  if (via_constant) {
    auto& c = builder.Node("Constant", {}, {"shape"});
    testing::SetIntsAttr(c, "value_ints", spec);
  } else {
    builder.Int64Initializer("shape", {static_cast<int64_t>(spec.size())},
                             spec);
  }
  auto& node = builder.Node("Reshape", {"x", "shape"}, {"y"});
  if (allow_zero >= 0) testing::SetIntAttr(node, "allowzero", allow_zero);
  auto model = builder.Load();
  if (!model.ok()) return model.status();
  int64_t n = 1;
  for (int64_t d : in) n *= d;
  return testing::RunModelOnce(*model, {HostTensor{in, Iota(n)}});
}

TEST(ReshapeOpTest, ZeroCopiesAndMinusOneInfers) {
  auto out = RunReshape({2, 3, 4}, {0, -1}, -1, false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 12}));
  EXPECT_EQ((*out)[0].data, Iota(24));
}

TEST(ReshapeOpTest, ShapeFromConstantNode) {
  auto out = RunReshape({2, 3, 4}, {4, -1, 2}, -1, true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{4, 3, 2}));
}

TEST(ReshapeOpTest, AllowZeroKeepsZero) {
  auto out = RunReshape({0, 3}, {0, 3}, 1, false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{0, 3}));
  EXPECT_EQ(RunReshape({2, 3}, {0, 6}, 1, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReshapeOpTest, BadSizesRejected) {
  EXPECT_EQ(RunReshape({2, 3}, {4, -1}, -1, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunReshape({2, 3}, {-1, -1}, -1, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlattenOpTest, AxisVariants) {
  const struct {
    int64_t axis;
    Shape want;
  } cases[] = {
      {1, {2, 12}}, {0, {1, 24}}, {3, {24, 1}}, {-1, {6, 4}}, {2, {6, 4}}};
  for (const auto& c : cases) {
    testing::OnnxModelBuilder builder;
    builder.Input("x", {2, 3, 4}).Output("y");
    testing::SetIntAttr(builder.Node("Flatten", {"x"}, {"y"}), "axis", c.axis);
    auto model = builder.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelOnce(*model, {HostTensor{{2, 3, 4}, Iota(24)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape, c.want) << "axis " << c.axis;
    EXPECT_EQ((*out)[0].data, Iota(24));
  }
}

TEST(IdentityOpTest, CopiesAndChains) {
  testing::OnnxModelBuilder builder;
  builder.Input("x", {2, 2}).Output("y").Output("z");
  builder.Node("Identity", {"x"}, {"y"});
  builder.Node("Identity", {"y"}, {"z"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{2, 2}, {1, 2, 3, 4}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ((*out)[1].data, (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace coalesce
