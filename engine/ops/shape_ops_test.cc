#include <cstdint>
#include <vector>

#include "engine/execution_plan.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeTyped;
using testing::TypedTensor;

std::vector<float> Iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(ShapeOpTest, WholeShapeAndStartEnd) {
  const Shape x = {2, 3, 4, 5};
  const struct {
    int64_t opset, start, end;  // end 99: attribute absent
    std::vector<int64_t> want;
  } cases[] = {
      {13, 0, 99, {2, 3, 4, 5}}, {15, 1, 99, {3, 4, 5}}, {15, -3, -1, {3, 4}},
      {15, 0, 10, {2, 3, 4, 5}}, {15, 3, 1, {}},         {15, -10, 1, {2}}};
  for (const auto& c : cases) {
    testing::OnnxModelBuilder b(c.opset);
    b.Input("x", x).Output("y", {}, onnx::TensorProto::INT64);
    auto& n = b.Node("Shape", {"x"}, {"y"});
    if (c.opset >= 15) {
      testing::SetIntAttr(n, "start", c.start);
      if (c.end != 99) testing::SetIntAttr(n, "end", c.end);
    }
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelTyped(
        *model, {MakeTyped(DataType::kFp32, x, Iota(120))});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dtype, DataType::kInt64);
    EXPECT_EQ((*out)[0].values<int64_t>(), c.want)
        << "start " << c.start << " end " << c.end;
  }
}

// The pattern exporters emit for x.view(x.size(0), -1): Shape -> Gather ->
// Concat -> Reshape, with a dynamic batch dim.
TEST(ShapeOpTest, ComputedReshapeShapeWithDynamicBatch) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 3, 4}).Output("y");
  b.Int64Initializer("zero", {1}, {0});
  b.Int64Initializer("minus_one", {1}, {-1});
  b.Node("Shape", {"x"}, {"shape"});
  testing::SetIntAttr(b.Node("Gather", {"shape", "zero"}, {"batch"}), "axis",
                      0);
  testing::SetIntAttr(b.Node("Concat", {"batch", "minus_one"}, {"target"}),
                      "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  for (int64_t batch : {1, 2, 5}) {
    auto out = testing::RunModelOnce(
        *model, {testing::HostTensor{{batch, 3, 4}, Iota(batch * 12)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape, (Shape{batch, 12}));
    EXPECT_EQ((*out)[0].data, Iota(batch * 12));
  }
  // The shape arithmetic is computed while planning and never run.
  auto plan = ExecutionPlan::Build(*model, {{2, 3, 4}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Graph& graph = (*model)->graph();
  for (size_t id = 0; id < graph.value_names.size(); ++id) {
    if (graph.value_names[id] == "target") {
      EXPECT_EQ((*plan)->values()[id].storage, ValueStorage::kConstant);
    }
  }
}

TEST(ConstantOfShapeOpTest, DefaultFloatZeroAndInt64Value) {
  testing::OnnxModelBuilder b(/*opset=*/17);
  b.Input("x", {-1, 2})
      .Output("zeros")
      .Output("sevens", {}, onnx::TensorProto::INT64);
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("ConstantOfShape", {"shape"}, {"zeros"});
  auto& n = b.Node("ConstantOfShape", {"shape"}, {"sevens"});
  auto* attr = n.add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  attr->mutable_t()->add_dims(1);
  attr->mutable_t()->add_int64_data(7);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {3, 2}, Iota(6))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{3, 2}));
  EXPECT_EQ((*out)[0].values<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ((*out)[1].dtype, DataType::kInt64);
  EXPECT_EQ((*out)[1].values<int64_t>(), std::vector<int64_t>(6, 7));
}

TEST(RangeOpTest, MatchesNaiveForFloatAndInt64) {
  const struct {
    double start, limit, delta;
  } cases[] = {{0, 5, 1}, {1, 10, 3}, {10, 4, -2}, {0, -3, 1}, {0.5, 2, 0.5}};
  for (const auto& c : cases) {
    for (bool is_float : {true, false}) {
      if (!is_float && c.start != static_cast<int64_t>(c.start)) continue;
      if (!is_float && c.delta != static_cast<int64_t>(c.delta)) continue;
      testing::OnnxModelBuilder b(/*opset=*/11);
      b.Input("unused", {1})
          .Output(
              "y", {},
              is_float ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
      if (is_float) {
        b.FloatInitializer("s", {}, {static_cast<float>(c.start)});
        b.FloatInitializer("l", {}, {static_cast<float>(c.limit)});
        b.FloatInitializer("d", {}, {static_cast<float>(c.delta)});
      } else {
        b.Int64Initializer("s", {}, {static_cast<int64_t>(c.start)});
        b.Int64Initializer("l", {}, {static_cast<int64_t>(c.limit)});
        b.Int64Initializer("d", {}, {static_cast<int64_t>(c.delta)});
      }
      b.Node("Range", {"s", "l", "d"}, {"y"});
      auto model = b.Load();
      ASSERT_TRUE(model.ok()) << model.status();
      auto out = testing::RunModelTyped(
          *model, {MakeTyped(DataType::kFp32, {1}, std::vector<float>{0})});
      ASSERT_TRUE(out.ok()) << out.status();
      std::vector<double> want;
      for (double v = c.start; c.delta > 0 ? v < c.limit : v > c.limit;
           v += c.delta)
        want.push_back(v);
      std::vector<double> got;
      if (is_float)
        for (float v : (*out)[0].values<float>()) got.push_back(v);
      else
        for (int64_t v : (*out)[0].values<int64_t>()) got.push_back(v);
      EXPECT_EQ(got, want) << c.start << ":" << c.limit << ":" << c.delta;
    }
  }
}

// A limit far behind the start (the fuzzer's -4.25e37) is an empty range,
// not a count cast out of int64's range.
TEST(RangeOpTest, LimitFarBehindStartIsEmpty) {
  testing::OnnxModelBuilder b(/*opset=*/11);
  b.Input("unused", {1}).Output("y");
  b.FloatInitializer("s", {}, {0.0f}).FloatInitializer("d", {}, {1.0f});
  b.FloatInitializer("l", {}, {-4.25e37f});
  b.Node("Range", {"s", "l", "d"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {1}, std::vector<float>{0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{0}));
}

TEST(RangeOpTest, ZeroDeltaRejected) {
  testing::OnnxModelBuilder b(/*opset=*/11);
  b.Input("unused", {1}).Output("y", {}, onnx::TensorProto::INT64);
  b.Int64Initializer("s", {}, {0}).Int64Initializer("d", {}, {0});
  b.Node("Range", {"s", "s", "d"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {MakeTyped(DataType::kFp32, {1}, std::vector<float>{0})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
