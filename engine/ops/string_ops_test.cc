// STRING tensors through the ops that move elements (they move StringRef
// handles), Equal, Where, Cast from STRING, and the compute ops that must
// refuse them.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using testing::MakeStrings;
using testing::MakeTyped;
using testing::StringsOf;

constexpr int32_t kString = onnx::TensorProto::STRING;

absl::StatusOr<std::vector<testing::TypedTensor>> RunStrings(
    const testing::OnnxModelBuilder& b,
    const std::vector<testing::TypedTensor>& inputs) {
  auto model = b.Load();
  if (!model.ok()) return model.status();
  return testing::RunModelTyped(*model, inputs);
}

TEST(StringOpsTest, ReshapeTransposeAndSliceMoveHandles) {
  const std::vector<std::string> x = {"a", "", "ccc", "dd", "e", "ffff"};
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {6}, kString).Output("y", {}, kString);
  b.Int64Initializer("shape", {2}, {2, 3});
  b.Int64Initializer("starts", {1}, {1});
  b.Int64Initializer("ends", {1}, {3});
  b.Int64Initializer("axes", {1}, {0});
  b.Node("Reshape", {"x", "shape"}, {"r"});
  b.Node("Transpose", {"r"}, {"t"});  // [3, 2]
  b.Node("Slice", {"t", "starts", "ends", "axes"}, {"y"});
  auto out = RunStrings(b, {MakeStrings({6}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype, DataType::kBytes);
  EXPECT_EQ((*out)[0].shape, (Shape{2, 2}));
  // t = [[a, dd], [, e], [ccc, ffff]]; rows 1..2.
  EXPECT_EQ(StringsOf((*out)[0]),
            (std::vector<std::string>{"", "e", "ccc", "ffff"}));
}

TEST(StringOpsTest, ConcatExpandAndPadWithEmptyStrings) {
  const std::vector<std::string> a = {"x", "y"}, c = {"zz"};
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("a", {2}, kString).Input("c", {1}, kString);
  b.Output("cat", {}, kString).Output("big", {}, kString);
  b.Output("pad", {}, kString);
  b.Int64Initializer("shape", {2}, {2, 3});
  b.Int64Initializer("pads", {2}, {1, 0});
  testing::SetIntAttr(b.Node("Concat", {"a", "c"}, {"cat"}), "axis", 0);
  b.Node("Expand", {"cat", "shape"}, {"big"});
  b.Node("Pad", {"a", "pads"}, {"pad"});
  auto out = RunStrings(b, {MakeStrings({2}, a), MakeStrings({1}, c)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(StringsOf((*out)[0]), (std::vector<std::string>{"x", "y", "zz"}));
  EXPECT_EQ((*out)[1].shape, (Shape{2, 3}));
  EXPECT_EQ(StringsOf((*out)[1]),
            (std::vector<std::string>{"x", "y", "zz", "x", "y", "zz"}));
  EXPECT_EQ(StringsOf((*out)[2]), (std::vector<std::string>{"", "x", "y"}));
}

TEST(StringOpsTest, GatherFromStringTableAndEqual) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("ids", {3}, onnx::TensorProto::INT64);
  b.Output("names", {}, kString).Output("is_cat", {}, onnx::TensorProto::BOOL);
  b.StringInitializer("table", {3}, {"dog", "cat", "caterpillar"});
  b.StringInitializer("cat", {}, {"cat"});
  b.Node("Gather", {"table", "ids"}, {"names"});
  b.Node("Equal", {"names", "cat"}, {"is_cat"});
  // The output's handles point into the model's constants: keep it.
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model,
      {MakeTyped(DataType::kInt64, {3}, std::vector<int64_t>{1, -1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(StringsOf((*out)[0]),
            (std::vector<std::string>{"cat", "caterpillar", "dog"}));
  EXPECT_EQ((*out)[1].values<uint8_t>(), (std::vector<uint8_t>{1, 0, 0}));
}

TEST(StringOpsTest, EqualBroadcastsAndComparesBytes) {
  const std::vector<std::string> a = {"a", std::string("a\0b", 3), ""};
  const std::vector<std::string> c = {std::string("a\0b", 3), ""};
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("a", {3}, kString).Input("c", {2, 1}, kString);
  b.Output("y", {}, onnx::TensorProto::BOOL);
  b.Node("Equal", {"a", "c"}, {"y"});
  auto out = RunStrings(b, {MakeStrings({3}, a), MakeStrings({2, 1}, c)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 3}));
  EXPECT_EQ((*out)[0].values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
}

TEST(StringOpsTest, WhereSelectsStrings) {
  const std::vector<std::string> x = {"yes", "oui"}, y = {"no"};
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("c", {2}, onnx::TensorProto::BOOL).Input("x", {2}, kString);
  b.Input("y", {1}, kString).Output("z", {}, kString);
  b.Node("Where", {"c", "x", "y"}, {"z"});
  auto out = RunStrings(b, {testing::MakeBool({2}, {0, 1}), MakeStrings({2}, x),
                            MakeStrings({1}, y)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(StringsOf((*out)[0]), (std::vector<std::string>{"no", "oui"}));
}

TEST(StringOpsTest, CastFromStringParsesOrNamesTheNode) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("s", {3}, kString).Output("n", {}, onnx::TensorProto::INT32);
  testing::SetIntAttr(b.Node("Cast", {"s"}, {"n"}, "to_int"), "to",
                      onnx::TensorProto::INT32);
  const std::vector<std::string> good = {"-5", "+12", "2147483647"};
  auto out = RunStrings(b, {MakeStrings({3}, good)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<int32_t>(),
            (std::vector<int32_t>{-5, 12, 2147483647}));
  const std::vector<std::string> bad = {"1", "2.5", "3"};
  auto failed = RunStrings(b, {MakeStrings({3}, bad)});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("node 'to_int'"));
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("\"2.5\" as INT32"));
}

// Without a string store (RunModelTyped passes none), Cast to STRING fails
// instead of writing handles to nowhere.
TEST(StringOpsTest, CastToStringNeedsAStore) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("n", {1}, onnx::TensorProto::INT32).Output("s", {}, kString);
  testing::SetIntAttr(b.Node("Cast", {"n"}, {"s"}), "to",
                      onnx::TensorProto::STRING);
  auto out = RunStrings(
      b, {MakeTyped(DataType::kInt32, {1}, std::vector<int32_t>{7})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal);
}

// A Cast to STRING whose input is known while planning is computed then,
// its strings owned by the plan.
TEST(StringOpsTest, CastToStringOfAConstantIsFoldedByThePlan) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}, kString).Output("y", {}, onnx::TensorProto::BOOL);
  b.Int64Initializer("n", {2}, {42, -1});
  testing::SetIntAttr(b.Node("Cast", {"n"}, {"s"}), "to",
                      onnx::TensorProto::STRING);
  b.Node("Equal", {"x", "s"}, {"y"});
  const std::vector<std::string> x = {"42", "1"};
  auto out = RunStrings(b, {MakeStrings({2}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0}));
}

TEST(StringOpsTest, ComputeOpsRefuseStrings) {
  for (const char* op : {"Relu", "Softmax", "Neg", "ArgMax", "Not"}) {
    testing::OnnxModelBuilder b(/*opset=*/13);
    b.Input("x", {2}, kString).Output("y");
    b.Node(op, {"x"}, {"y"});
    const std::vector<std::string> x = {"1", "2"};
    auto out = RunStrings(b, {MakeStrings({2}, x)});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << op;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr("BYTES")) << op;
  }
  for (const char* op : {"Add", "Less", "MatMul"}) {
    testing::OnnxModelBuilder b(/*opset=*/13);
    b.Input("x", {2}, kString).Output("y");
    b.Node(op, {"x", "x"}, {"y"});
    const std::vector<std::string> x = {"1", "2"};
    auto out = RunStrings(b, {MakeStrings({2}, x)});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << op;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr("BYTES")) << op;
  }
}

}  // namespace
}  // namespace coalesce
