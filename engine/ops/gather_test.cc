#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeTyped;

TEST(GatherOpTest, EveryAxisWithNegativeIndicesMatchesNaive) {
  const Shape x_shape = {2, 3, 4};
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = i * 0.5f;
  const std::vector<int64_t> idx = {1, -1};  // [2]
  for (int64_t axis : {0, 1, 2, -1}) {
    testing::OnnxModelBuilder b(/*opset=*/13);
    b.Input("x", x_shape).Output("y");
    b.Int64Initializer("i", {2}, idx);
    testing::SetIntAttr(b.Node("Gather", {"x", "i"}, {"y"}), "axis", axis);
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelTyped(*model,
                                      {MakeTyped(DataType::kFp32, x_shape, x)});
    ASSERT_TRUE(out.ok()) << out.status();
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape want_shape = x_shape;
    want_shape[a] = 2;
    std::vector<float> want;
    for (int64_t i = 0; i < want_shape[0]; ++i)
      for (int64_t j = 0; j < want_shape[1]; ++j)
        for (int64_t k = 0; k < want_shape[2]; ++k) {
          int64_t src[3] = {i, j, k};
          const int64_t chosen = idx[src[a]];
          src[a] = chosen < 0 ? chosen + x_shape[a] : chosen;
          want.push_back(x[(src[0] * 3 + src[1]) * 4 + src[2]]);
        }
    EXPECT_EQ((*out)[0].shape, want_shape) << "axis " << axis;
    EXPECT_EQ((*out)[0].values<float>(), want) << "axis " << axis;
  }
}

TEST(GatherOpTest, ScalarIndexDropsAxisAndBadIndexFails) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {3, 2}, onnx::TensorProto::INT64)
      .Input("i", {}, onnx::TensorProto::INT32)
      .Output("y", {}, onnx::TensorProto::INT64);
  b.Node("Gather", {"x", "i"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const auto x = MakeTyped(DataType::kInt64, {3, 2},
                           std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  auto out = testing::RunModelTyped(
      *model, {x, MakeTyped(DataType::kInt32, {}, std::vector<int32_t>{-2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2}));
  EXPECT_EQ((*out)[0].values<int64_t>(), (std::vector<int64_t>{3, 4}));
  auto bad = testing::RunModelTyped(
      *model, {x, MakeTyped(DataType::kInt32, {}, std::vector<int32_t>{3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
