#include <algorithm>
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

float At(const std::vector<float>& v, const Shape& s, const Shape& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + (s[d] == 1 ? 0 : idx[idx.size() - s.size() + d]);
  return v[f];
}

// Runs `op` over graph inputs of `shapes` and checks against a naive fold.
void Check(int64_t opset, const std::string& op,
           const std::vector<Shape>& shapes, const Shape& out_shape) {
  testing::OnnxModelBuilder builder(opset);
  std::vector<std::string> names;
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    builder.Input(names.back(), shapes[i]);
    inputs.push_back(
        HostTensor{shapes[i], testing::RandomFloats(Count(shapes[i]), i + 1)});
  }
  builder.Output("y");
  builder.Node(op, names, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, out_shape);
  for (int64_t flat = 0; flat < Count(out_shape); ++flat) {
    Shape idx(out_shape.size());
    for (int64_t d = out_shape.size() - 1, r = flat; d >= 0; --d) {
      idx[d] = r % out_shape[d];
      r /= out_shape[d];
    }
    double acc = At(inputs[0].data, shapes[0], idx);
    for (size_t i = 1; i < inputs.size(); ++i) {
      const double v = At(inputs[i].data, shapes[i], idx);
      if (op == "Max")
        acc = std::max(acc, v);
      else if (op == "Min")
        acc = std::min(acc, v);
      else
        acc += v;
    }
    if (op == "Mean") acc /= inputs.size();
    ASSERT_NEAR((*out)[0].data[flat], acc, 1e-6) << op << " at " << flat;
  }
}

TEST(VariadicOpTest, SingleInputIsCopy) {
  for (const char* op : {"Sum", "Max", "Min", "Mean"})
    Check(13, op, {{2, 3}}, {2, 3});
}

TEST(VariadicOpTest, SameShapes) {
  for (const char* op : {"Sum", "Max", "Min", "Mean"}) {
    Check(6, op, {{2, 3}, {2, 3}}, {2, 3});  // before broadcasting (opset 8)
    Check(13, op, {{2, 3}, {2, 3}, {2, 3}, {2, 3}}, {2, 3});
  }
}

TEST(VariadicOpTest, MultidirectionalBroadcast) {
  for (const char* op : {"Sum", "Max", "Min", "Mean"}) {
    for (int64_t opset : {8, 13}) {
      Check(opset, op, {{3}, {2, 1}}, {2, 3});
      // The first input is smaller than the output.
      Check(opset, op, {{1}, {4, 1}, {1, 3}}, {4, 3});
      Check(opset, op, {{2, 1, 3}, {}, {4, 1}}, {2, 4, 3});
      // The first two give the output's shape; the third broadcasts.
      Check(opset, op, {{4, 1}, {1, 3}, {3}}, {4, 3});
    }
  }
}

TEST(VariadicOpTest, IncompatibleShapesRejected) {
  testing::OnnxModelBuilder builder(13);
  builder.Input("a", {2, 3}).Input("b", {2, 3}).Input("c", {4}).Output("y");
  builder.Node("Sum", {"a", "b", "c"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out =
      testing::RunModelOnce(*model, {HostTensor{{2, 3}, std::vector<float>(6)},
                                     HostTensor{{2, 3}, std::vector<float>(6)},
                                     HostTensor{{4}, std::vector<float>(4)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
