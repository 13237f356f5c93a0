// NonZero: computed while planning when its input is known then (from an
// initializer or from shapes), refused at load, by name, when its input
// comes from a request's data.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeTyped;

TEST(NonZeroOpTest, ConstantInputIsComputedWhilePlanning) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1}).Output("y").Output("nz", {}, onnx::TensorProto::INT64);
  b.Int64Initializer("c", {2, 3}, {0, 7, 0, -1, 0, 2});
  b.Node("NonZero", {"c"}, {"nz"});
  b.Node("Relu", {"x"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {2}, std::vector<float>{1, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape, (Shape{2, 3}));
  EXPECT_EQ((*out)[1].values<int64_t>(),
            (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
}

TEST(NonZeroOpTest, RunTimeInputIsRefusedAtLoadNamingTheNode) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1}).Output("nz", {}, onnx::TensorProto::INT64);
  b.Node("Relu", {"x"}, {"r"});
  b.Node("NonZero", {"r"}, {"nz"}, "the_nonzero");
  auto model = b.Load();
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented)
      << model.status();
  EXPECT_NE(model.status().message().find("node 'the_nonzero' (op 'NonZero')"),
            std::string::npos)
      << model.status();
}

TEST(NonZeroOpTest, InputFromShapesIsComputedWhilePlanning) {
  // NonZero of x's shape minus 1 (a [2] vector): known once x's shape is.
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, -1}).Output("nz", {}, onnx::TensorProto::INT64);
  b.Int64Initializer("one", {}, {1});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Sub", {"s", "one"}, {"d"});
  b.Node("NonZero", {"d"}, {"nz"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {1, 3}, std::vector<float>(3))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{1, 1}));
  EXPECT_EQ((*out)[0].values<int64_t>(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace coalesce
