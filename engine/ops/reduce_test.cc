#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/execution_plan.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

const Shape kShape = {2, 3, 4};

// Naive reference over the [2,3,4] input: output coordinate (kept dims only)
// for every input element.
std::vector<float> Reference(const std::string& op, const std::vector<float>& x,
                             const std::vector<bool>& reduce) {
  std::vector<double> acc;
  std::vector<int> count;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int idx[3] = {i, j, k};
        int o = 0;
        for (int d = 0; d < 3; ++d)
          if (!reduce[d]) o = o * kShape[d] + idx[d];
        if (o >= static_cast<int>(acc.size())) {
          acc.resize(o + 1, op == "ReduceMax" ? -INFINITY : 0.0);
          count.resize(o + 1, 0);
        }
        const double v = x[(i * 3 + j) * 4 + k];
        acc[o] = op == "ReduceMax" ? std::max(acc[o], v) : acc[o] + v;
        ++count[o];
      }
  std::vector<float> out;
  for (size_t o = 0; o < acc.size(); ++o)
    out.push_back(op == "ReduceMean" ? acc[o] / count[o] : acc[o]);
  return out;
}

struct Case {
  int64_t opset;
  std::vector<int64_t> axes;  // empty: none given
  int keepdims = -1;          // -1: attribute absent
  int noop = -1;              // -1: attribute absent
};

// Axes go in an attribute or, from `axes_input_opset`, an int64 initializer.
void Check(const std::string& op, int64_t axes_input_opset, const Case& c,
           const std::vector<bool>& reduce, const Shape& out_shape) {
  testing::OnnxModelBuilder builder(c.opset);
  builder.Input("x", kShape).Output("y");
  std::vector<std::string> inputs = {"x"};
  const bool axes_input = c.opset >= axes_input_opset;
  if (axes_input && !c.axes.empty()) {
    builder.Int64Initializer("axes", {static_cast<int64_t>(c.axes.size())},
                             c.axes);
    inputs.push_back("axes");
  }
  onnx::NodeProto& node = builder.Node(op, inputs, {"y"});
  if (!axes_input && !c.axes.empty())
    testing::SetIntsAttr(node, "axes", c.axes);
  if (c.keepdims >= 0) testing::SetIntAttr(node, "keepdims", c.keepdims);
  if (c.noop >= 0) testing::SetIntAttr(node, "noop_with_empty_axes", c.noop);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const auto x = testing::RandomFloats(24, 5);
  auto out = testing::RunModelOnce(*model, {HostTensor{kShape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, out_shape) << op << " opset " << c.opset;
  const auto want = Reference(op, x, reduce);
  ASSERT_EQ((*out)[0].data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR((*out)[0].data[i], want[i], 1e-5) << op << " " << i;
}

struct OpInfo {
  const char* name;
  int64_t axes_input_opset;
};
constexpr OpInfo kOps[] = {
    {"ReduceSum", 13}, {"ReduceMean", 18}, {"ReduceMax", 18}};

TEST(ReduceOpTest, AxesAttributeBeforeInputOpset) {
  for (const OpInfo& op : kOps) {
    const int64_t opset = op.axes_input_opset - 2;
    Check(op.name, op.axes_input_opset, {opset, {1}}, {false, true, false},
          {2, 1, 4});
    Check(op.name, op.axes_input_opset, {opset, {-1, 0}, 0},
          {true, false, true}, {3});
    Check(op.name, op.axes_input_opset, {opset, {}}, {true, true, true},
          {1, 1, 1});
    Check(op.name, op.axes_input_opset, {opset, {}, 0}, {true, true, true}, {});
  }
}

TEST(ReduceOpTest, AxesInputSinceOpset) {
  for (const OpInfo& op : kOps) {
    for (int64_t opset : {op.axes_input_opset, int64_t{18}}) {
      Check(op.name, op.axes_input_opset, {opset, {2}}, {false, false, true},
            {2, 3, 1});
      Check(op.name, op.axes_input_opset, {opset, {0, -2}, 0},
            {true, true, false}, {4});
      Check(op.name, op.axes_input_opset, {opset, {}, 1}, {true, true, true},
            {1, 1, 1});
      // noop_with_empty_axes=1 without axes: identity.
      Check(op.name, op.axes_input_opset, {opset, {}, -1, 1},
            {false, false, false}, {2, 3, 4});
      Check(op.name, op.axes_input_opset, {opset, {1}, -1, 1},
            {false, true, false}, {2, 1, 4});
    }
  }
}

TEST(ReduceOpTest, NonConstantAxesRejected) {
  testing::OnnxModelBuilder builder(18);
  builder.Input("x", {2, 3}).Input("axes", {1}, onnx::TensorProto::INT64);
  builder.Output("y");
  builder.Node("ReduceMean", {"x", "axes"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto plan = ExecutionPlan::Build(*model, {Shape{2, 3}, Shape{1}});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReduceOpTest, BadAxesRejected) {
  for (const std::vector<int64_t>& axes :
       {std::vector<int64_t>{3}, std::vector<int64_t>{1, -2}}) {
    testing::OnnxModelBuilder builder(13);
    builder.Input("x", {2, 3, 4}).Output("y");
    testing::SetIntsAttr(builder.Node("ReduceMean", {"x"}, {"y"}), "axes",
                         axes);
    auto model = builder.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelOnce(
        *model, {HostTensor{{2, 3, 4}, std::vector<float>(24)}});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ReduceOpTest, AxesAttributeRejectedAtInputOpset) {
  testing::OnnxModelBuilder builder(18);
  builder.Input("x", {2, 3}).Output("y");
  testing::SetIntsAttr(builder.Node("ReduceMax", {"x"}, {"y"}), "axes", {0});
  EXPECT_EQ(builder.Load().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
