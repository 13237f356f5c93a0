#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeTyped;

TEST(ExpandOpTest, BidirectionalBroadcastMatchesNaive) {
  // x [3,1] expanded by shape [2,1,4] -> [2,3,4]
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {3, 1}, onnx::TensorProto::INT64)
      .Output("y", {}, onnx::TensorProto::INT64);
  b.Int64Initializer("shape", {3}, {2, 1, 4});
  b.Node("Expand", {"x", "shape"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<int64_t> x = {10, 20, 30};
  auto out =
      testing::RunModelTyped(*model, {MakeTyped(DataType::kInt64, {3, 1}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 3, 4}));
  std::vector<int64_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(x[j]);
  EXPECT_EQ((*out)[0].values<int64_t>(), want);
}

TEST(ExpandOpTest, IncompatibleShapeRejected) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {3}).Output("y");
  b.Int64Initializer("shape", {1}, {2});
  b.Node("Expand", {"x", "shape"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(testing::RunModelOnce(*model, {{{3}, {1, 2, 3}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TileOpTest, MatchesNaive) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2, 3}).Output("y");
  b.Int64Initializer("repeats", {2}, {3, 2});
  b.Node("Tile", {"x", "repeats"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto out = testing::RunModelOnce(*model, {{{2, 3}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{6, 6}));
  std::vector<float> want;
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 6; ++c) want.push_back(x[(r % 2) * 3 + c % 3]);
  EXPECT_EQ((*out)[0].data, want);
}

// Repeats whose product with the axis int64 cannot hold (the fuzzer's
// 1493172225 * 70368744177665) are refused, not overflowed.
TEST(TileOpTest, OverflowingRepeatsAreInvalid) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2, 3}).Output("y");
  b.Int64Initializer("repeats", {2}, {1, int64_t{1} << 62});
  b.Node("Tile", {"x", "repeats"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2, 3}, {1, 2, 3, 4, 5, 6}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
}

}  // namespace
}  // namespace coalesce
