#include <cstdint>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeBool;
using testing::MakeTyped;

TEST(CompareOpTest, BroadcastFloatAndInt64MatchNaive) {
  const std::vector<float> a = {1, 5, 3, 4, 2, 6};  // [2,3]
  const std::vector<float> b = {3, 2, 6};           // [3]
  for (const std::string op : {"Equal", "Less", "Greater"}) {
    for (bool as_int : {false, true}) {
      const int32_t type =
          as_int ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT;
      testing::OnnxModelBuilder builder(/*opset=*/13);
      builder.Input("a", {2, 3}, type)
          .Input("b", {3}, type)
          .Output("y", {}, onnx::TensorProto::BOOL);
      builder.Node(op, {"a", "b"}, {"y"});
      auto model = builder.Load();
      ASSERT_TRUE(model.ok()) << model.status();
      std::vector<testing::TypedTensor> in;
      if (as_int) {
        in = {MakeTyped(DataType::kInt64, {2, 3},
                        std::vector<int64_t>(a.begin(), a.end())),
              MakeTyped(DataType::kInt64, {3},
                        std::vector<int64_t>(b.begin(), b.end()))};
      } else {
        in = {MakeTyped(DataType::kFp32, {2, 3}, a),
              MakeTyped(DataType::kFp32, {3}, b)};
      }
      auto out = testing::RunModelTyped(*model, in);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ((*out)[0].dtype, DataType::kBool);
      std::vector<uint8_t> want;
      for (int i = 0; i < 6; ++i) {
        const float x = a[i], y = b[i % 3];
        want.push_back(op == "Equal" ? x == y : op == "Less" ? x < y : x > y);
      }
      EXPECT_EQ((*out)[0].values<uint8_t>(), want) << op << " int " << as_int;
    }
  }
}

TEST(CompareOpTest, MismatchedTypesRejected) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("a", {2})
      .Input("b", {2}, onnx::TensorProto::INT64)
      .Output("y", {}, onnx::TensorProto::BOOL);
  b.Node("Less", {"a", "b"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {2}, std::vector<float>{1, 2}),
               MakeTyped(DataType::kInt64, {2}, std::vector<int64_t>{1, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NotWhereOpTest, NotThenWhereBroadcasts) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("c", {2, 1}, onnx::TensorProto::BOOL).Input("x", {3}).Output("y");
  b.FloatInitializer("minus", {}, {-1.0f});
  b.Node("Not", {"c"}, {"nc"});
  b.Node("Where", {"nc", "x", "minus"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<uint8_t> c = {1, 0};
  const std::vector<float> x = {1, 2, 3};
  auto out = testing::RunModelTyped(
      *model, {MakeBool({2, 1}, c), MakeTyped(DataType::kFp32, {3}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 3}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(!c[i] ? x[j] : -1.0f);
  EXPECT_EQ((*out)[0].values<float>(), want);
}

}  // namespace
}  // namespace coalesce
