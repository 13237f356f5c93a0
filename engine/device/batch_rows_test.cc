// BatchRowsIndependent on planned models: the operator forms that keep batch
// rows apart, and those that mix them or only might (each must say false).
#include "engine/device/batch_rows.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::coalesce::testing::OnnxModelBuilder;
using ::coalesce::testing::RandomFloats;
using ::coalesce::testing::SetIntAttr;
using ::coalesce::testing::SetIntsAttr;

// Plans `builder`'s model for these input shapes and analyses the plan.
bool Independent(const OnnxModelBuilder& builder,
                 const std::vector<Shape>& shapes) {
  auto model = builder.Load();
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return false;
  auto plan = MakeNeutralPlanner(*model)(shapes);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() && BatchRowsIndependent(**plan);
}

// x [N, 4] through one node `op` (with `attrs` applied) into y.
OnnxModelBuilder OneNode(const std::string& op,
                         void (*attrs)(onnx::NodeProto&) = nullptr) {
  OnnxModelBuilder b;
  b.Input("x", {-1, 4});
  auto& node = b.Node(op, {"x"}, {"y"});
  if (attrs != nullptr) attrs(node);
  b.Output("y");
  return b;
}

TEST(BatchRowsTest, MlpRowsAreIndependent) {
  OnnxModelBuilder b;
  b.proto().ParseFromString(::coalesce::testing::BuildMlpModel(6, 8, 3, 1));
  EXPECT_TRUE(Independent(b, {{4, 6}}));
}

TEST(BatchRowsTest, OneRowCannotTellTheBatchFromABroadcast) {
  OnnxModelBuilder b;
  b.proto().ParseFromString(::coalesce::testing::BuildMlpModel(6, 8, 3, 1));
  EXPECT_FALSE(Independent(b, {{1, 6}}));
}

TEST(BatchRowsTest, SoftmaxAndConcatDependOnTheirAxis) {
  EXPECT_TRUE(Independent(OneNode("Softmax"), {{3, 4}}));
  EXPECT_FALSE(Independent(
      OneNode("Softmax", [](onnx::NodeProto& n) { SetIntAttr(n, "axis", 0); }),
      {{3, 4}}));
  for (int64_t axis : {0, 1}) {
    OnnxModelBuilder b;
    b.Input("x", {-1, 4});
    SetIntAttr(b.Node("Concat", {"x", "x"}, {"y"}), "axis", axis);
    b.Output("y");
    EXPECT_EQ(Independent(b, {{3, 4}}), axis == 1) << "axis " << axis;
  }
}

TEST(BatchRowsTest, TransposeMustKeepTheBatchFirst) {
  EXPECT_FALSE(Independent(OneNode("Transpose"), {{3, 4}}));  // reversed
  OnnxModelBuilder b;
  b.Input("x", {-1, 4, 5});
  SetIntsAttr(b.Node("Transpose", {"x"}, {"y"}), "perm", {0, 2, 1});
  b.Output("y");
  EXPECT_TRUE(Independent(b, {{3, 4, 5}}));
}

// x^T x sums over the batch: its output has no batch rows.
TEST(BatchRowsTest, AProductOverTheBatchMixesRows) {
  OnnxModelBuilder b;
  b.Input("x", {-1, 4});
  SetIntsAttr(b.Node("Transpose", {"x"}, {"xt"}), "perm", {1, 0});
  b.Node("MatMul", {"xt", "x"}, {"y"});
  b.Output("y");
  EXPECT_FALSE(Independent(b, {{3, 4}}));
}

TEST(BatchRowsTest, ReshapeMustKeepDimZero) {
  for (bool keep : {true, false}) {
    OnnxModelBuilder b;
    b.Input("x", {-1, 4});
    b.Int64Initializer(
        "shape", {2},
        keep ? std::vector<int64_t>{0, 4} : std::vector<int64_t>{-1, 2});
    b.Node("Reshape", {"x", "shape"}, {"y"});
    b.Output("y");
    EXPECT_EQ(Independent(b, {{3, 4}}), keep);
  }
}

// Attention's batched products: both sides stacked by the batch.
TEST(BatchRowsTest, StackedMatMulOfTwoBatchedValues) {
  OnnxModelBuilder b;
  b.Input("q", {-1, 2, 4, 8});
  b.Input("k", {-1, 2, 8, 4});
  b.Node("MatMul", {"q", "k"}, {"y"});
  b.Output("y");
  EXPECT_TRUE(Independent(b, {{3, 2, 4, 8}, {3, 2, 8, 4}}));
}

// An unbatched operand as large as the batch would pair row i with its own
// row i: allowed only when it broadcasts (a lower rank or a leading 1).
TEST(BatchRowsTest, AnOperandSpanningTheBatchIsRefused) {
  for (int64_t rows : {1, 3}) {
    OnnxModelBuilder b;
    b.Input("x", {-1, 4});
    b.FloatInitializer("c", {rows, 4}, RandomFloats(rows * 4, 1));
    b.Node("Add", {"x", "c"}, {"y"});
    b.Output("y");
    EXPECT_EQ(Independent(b, {{3, 4}}), rows == 1) << "rows " << rows;
  }
}

TEST(BatchRowsTest, GatherByBatchedIndicesOrOnAnotherAxis) {
  OnnxModelBuilder embed;
  embed.Input("ids", {-1, 5}, onnx::TensorProto::INT64);
  embed.FloatInitializer("table", {10, 4}, RandomFloats(40, 2));
  embed.Node("Gather", {"table", "ids"}, {"y"});
  embed.Output("y");
  EXPECT_TRUE(Independent(embed, {{3, 5}}));

  for (int64_t axis : {0, 1}) {
    OnnxModelBuilder b;
    b.Input("x", {-1, 4});
    b.Int64Initializer("i", {2}, {0, 1});
    SetIntAttr(b.Node("Gather", {"x", "i"}, {"y"}), "axis", axis);
    b.Output("y");
    EXPECT_EQ(Independent(b, {{3, 4}}), axis == 1) << "axis " << axis;
  }
}

TEST(BatchRowsTest, ConvolutionAndPooling) {
  OnnxModelBuilder b;
  b.Input("x", {-1, 2, 5, 5});
  b.FloatInitializer("w", {3, 2, 3, 3}, RandomFloats(54, 3));
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("GlobalAveragePool", {"c"}, {"y"});
  b.Output("y");
  EXPECT_TRUE(Independent(b, {{2, 2, 5, 5}}));
}

TEST(BatchRowsTest, AnOperatorOutsideTheRulesIsRefused) {
  EXPECT_FALSE(Independent(OneNode("Neg"), {{3, 4}}));
}

}  // namespace
}  // namespace coalesce
