#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

// Runs Squeeze/Unsqueeze with axes as attribute (opset < 13) or input.
absl::StatusOr<Shape> RunAxesOp(const std::string& op, int64_t opset,
                                const Shape& in,
                                const std::vector<int64_t>& axes) {
  testing::OnnxModelBuilder b(opset);
  b.Input("x", in).Output("y");
  std::vector<std::string> inputs = {"x"};
  if (opset >= 13 && !axes.empty()) {
    b.Int64Initializer("axes", {static_cast<int64_t>(axes.size())}, axes);
    inputs.push_back("axes");
  }
  auto& n = b.Node(op, inputs, {"y"});
  if (opset < 13 && !axes.empty()) testing::SetIntsAttr(n, "axes", axes);
  auto model = b.Load();
  if (!model.ok()) return model.status();
  int64_t count = 1;
  for (int64_t d : in) count *= d;
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = i;
  auto out = testing::RunModelOnce(*model, {testing::HostTensor{in, data}});
  if (!out.ok()) return out.status();
  if ((*out)[0].data != data) return absl::InternalError("data changed");
  return (*out)[0].shape;
}

TEST(SqueezeOpTest, AttributeAndInputForms) {
  for (int64_t opset : {11, 13}) {
    EXPECT_EQ(*RunAxesOp("Squeeze", opset, {1, 3, 1, 2}, {0, -2}),
              (Shape{3, 2}));
    EXPECT_EQ(*RunAxesOp("Squeeze", opset, {1, 3, 1, 2}, {}), (Shape{3, 2}));
    EXPECT_EQ(*RunAxesOp("Unsqueeze", opset, {3, 2}, {0, -1}),
              (Shape{1, 3, 2, 1}));
    EXPECT_EQ(*RunAxesOp("Unsqueeze", opset, {3}, {1, 0}), (Shape{1, 1, 3}));
    EXPECT_EQ(RunAxesOp("Squeeze", opset, {2, 3}, {0}).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(RunAxesOp("Unsqueeze", opset, {3}, {0, 0}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace coalesce
