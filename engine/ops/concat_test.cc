#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// a is [2,2,2] of 0..7, b is [2,2,2] of 100..107 (or [2,1,2] etc. per axis).
void Check(int64_t axis, const Shape& b_shape, const Shape& want_shape,
           const std::vector<float>& want) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {2, 2, 2}).Input("b", b_shape).Output("y");
  testing::SetIntAttr(builder.Node("Concat", {"a", "b"}, {"y"}), "axis", axis);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> a(8), b;
  for (int i = 0; i < 8; ++i) a[i] = i;
  int64_t nb = 1;
  for (int64_t d : b_shape) nb *= d;
  for (int i = 0; i < nb; ++i) b.push_back(100 + i);
  auto out = testing::RunModelOnce(
      *model, {HostTensor{{2, 2, 2}, a}, HostTensor{b_shape, b}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, want_shape);
  EXPECT_EQ((*out)[0].data, want);
}

TEST(ConcatOpTest, Axis0) {
  Check(0, {1, 2, 2}, {3, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102, 103});
}
TEST(ConcatOpTest, Axis1) {
  Check(1, {2, 1, 2}, {2, 3, 2}, {0, 1, 2, 3, 100, 101, 4, 5, 6, 7, 102, 103});
}
TEST(ConcatOpTest, NegativeAxisIsLast) {
  Check(-1, {2, 2, 1}, {2, 2, 3}, {0, 1, 100, 2, 3, 101, 4, 5, 102, 6, 7, 103});
}
TEST(ConcatOpTest, MismatchRejected) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {2, 2}).Input("b", {3, 3}).Output("y");
  testing::SetIntAttr(builder.Node("Concat", {"a", "b"}, {"y"}), "axis", 0);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok());
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 2}, std::vector<float>(4)},
                                    HostTensor{{3, 3}, std::vector<float>(9)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}
TEST(ConcatOpTest, MissingAxisRejectedAtLoad) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {2}).Output("y");
  builder.Node("Concat", {"a", "a"}, {"y"});
  EXPECT_EQ(builder.Load().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
