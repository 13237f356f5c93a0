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

// `op` on two [3] inputs of one type, as bools.
template <typename T>
std::vector<uint8_t> RunCompare(const std::string& op, DataType dtype,
                                int32_t onnx_type, const std::vector<T>& a,
                                const std::vector<T>& b) {
  testing::OnnxModelBuilder builder(/*opset=*/13);
  builder.Input("a", {3}, onnx_type).Input("b", {3}, onnx_type);
  builder.Output("y", {}, onnx::TensorProto::BOOL);
  builder.Node(op, {"a", "b"}, {"y"});
  auto model = builder.Load();
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(dtype, {3}, a), MakeTyped(dtype, {3}, b)});
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  return out.ok() ? (*out)[0].template values<uint8_t>()
                  : std::vector<uint8_t>{};
}

TEST(CompareOpTest, EveryNumericType) {
  EXPECT_EQ(
      RunCompare<uint8_t>("Equal", DataType::kUint8, onnx::TensorProto::UINT8,
                          {1, 200, 3}, {1, 201, 3}),
      (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(RunCompare<int8_t>("Less", DataType::kInt8, onnx::TensorProto::INT8,
                               {-128, 5, 7}, {127, 5, -7}),
            (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(RunCompare<uint64_t>("Greater", DataType::kUint64,
                                 onnx::TensorProto::UINT64,
                                 {18446744073709551615ull, 0, 2}, {1, 1, 2}),
            (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(
      RunCompare<double>("Equal", DataType::kFp64, onnx::TensorProto::DOUBLE,
                         {0.30000000000000004, 0.5, -0.0}, {0.3, 0.5, 0.0}),
      (std::vector<uint8_t>{0, 1, 1}));
  // float16 -2.5, 1.0, NaN against 1.0, 1.0, NaN.
  EXPECT_EQ(
      RunCompare<uint16_t>("Less", DataType::kFp16, onnx::TensorProto::FLOAT16,
                           {0xc100, 0x3c00, 0x7e00}, {0x3c00, 0x3c00, 0x7e00}),
      (std::vector<uint8_t>{1, 0, 0}));
  // bfloat16 -0 == 0; NaN != NaN.
  EXPECT_EQ(RunCompare<uint16_t>(
                "Equal", DataType::kBf16, onnx::TensorProto::BFLOAT16,
                {0x8000, 0x3f80, 0x7fc0}, {0x0000, 0x4000, 0x7fc0}),
            (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(RunCompare<uint16_t>("Greater", DataType::kUint16,
                                 onnx::TensorProto::UINT16, {65535, 1, 2},
                                 {1, 65535, 2}),
            (std::vector<uint8_t>{1, 0, 0}));
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
