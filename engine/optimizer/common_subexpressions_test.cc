// Common subexpressions (graph_optimizer.h, pass 10): identical nodes over
// the same inputs, or over constants of equal value, become one and the
// model computes what it did; different attributes, different constants,
// random operators and graph outputs stay apart.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/optimizer/graph_optimizer.h"
#include "engine/testing/onnx_model_builder.h"
#include "engine/testing/optimizer_compare.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

int CountOps(const Model& model, const std::string& op) {
  return static_cast<int>(
      std::count_if(model.graph().nodes.begin(), model.graph().nodes.end(),
                    [&](const GraphNode& n) { return n.op_type == op; }));
}

// Only this pass (and dead node removal) on: the other passes would fold
// or fuse the small graphs below.
ModelOptions OnlyThisPass() {
  ModelOptions options;
  options.optimizer = OptimizerOptions::None();
  options.optimizer.common_subexpressions = true;
  options.optimizer.dead_node_removal = true;
  return options;
}

std::shared_ptr<const Model> LoadAndCompare(const OnnxModelBuilder& b) {
  return testing::LoadOptimizedAndCompare(
      b.Serialize(), OnlyThisPass(), {{{2, 3}, testing::RandomFloats(6, 1)}});
}

// Hugging Face's per-layer mask as TorchScript exports it: each of
// `layers` layers computes Where(mask, zero, minus_inf) with its own
// constants of equal value, and adds it to its own scores.
OnnxModelBuilder PerLayerMasks(int layers, bool equal_constants) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  b.FloatInitializer("half", {}, {0.5f});
  b.Node("Greater", {"x", "half"}, {"mask"});
  std::string h = "x";
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    b.FloatInitializer("zero" + n, {}, {0.0f});
    b.FloatInitializer("low" + n, {}, {equal_constants ? -1e4f : -1e4f - l});
    b.Node("Where", {"mask", "zero" + n, "low" + n}, {"bias" + n});
    b.Node("Add", {h, "bias" + n}, {"h" + n});
    h = "h" + n;
  }
  b.Node("Identity", {h}, {"y"});
  b.Output("y");
  return b;
}

TEST(CommonSubexpressionsTest, EqualMasksOfEveryLayerBecomeOne) {
  auto model = LoadAndCompare(PerLayerMasks(4, /*equal_constants=*/true));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Where"), 1);
  EXPECT_EQ(CountOps(*model, "Add"), 4);
}

TEST(CommonSubexpressionsTest, DifferentConstantsStayApart) {
  auto model = LoadAndCompare(PerLayerMasks(3, /*equal_constants=*/false));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Where"), 3);
}

TEST(CommonSubexpressionsTest, AChainOfDuplicatesMergesInOnePass) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  for (const char* side : {"a", "b"}) {
    const std::string s = side;
    b.Node("Sigmoid", {"x"}, {s + "1"});
    b.Node("Neg", {s + "1"}, {s + "2"});
  }
  b.Node("Sub", {"a2", "b2"}, {"y"});  // zero
  b.Output("y");
  auto model = LoadAndCompare(b);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Sigmoid"), 1);
  EXPECT_EQ(CountOps(*model, "Neg"), 1);
}

TEST(CommonSubexpressionsTest, AttributesAndInputOrderKeepNodesApart) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  testing::SetFloatAttr(b.Node("LeakyRelu", {"x"}, {"a"}), "alpha", 0.1f);
  testing::SetFloatAttr(b.Node("LeakyRelu", {"x"}, {"b"}), "alpha", 0.2f);
  b.Node("Sub", {"a", "b"}, {"d1"});
  b.Node("Sub", {"b", "a"}, {"d2"});
  b.Node("Mul", {"d1", "d2"}, {"y"});
  b.Output("y");
  auto model = LoadAndCompare(b);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "LeakyRelu"), 2);
  EXPECT_EQ(CountOps(*model, "Sub"), 2);
}

TEST(CommonSubexpressionsTest, GraphOutputsKeepTheirNodes) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  b.Node("Relu", {"x"}, {"y1"});
  b.Node("Relu", {"x"}, {"y2"});
  b.Output("y1").Output("y2");
  auto model = LoadAndCompare(b);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Relu"), 2);
}

TEST(CommonSubexpressionsTest, AnOptionalOutputLeftOutKeepsNodesApart) {
  // Dropout(x) -> (d1, "") and Dropout(x) -> (d2, m2): merging would rename
  // m2, which a Cast reads, to the absent output.
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  b.Node("Dropout", {"x"}, {"d1", ""});
  b.Node("Dropout", {"x"}, {"d2", "m2"});
  testing::SetIntAttr(b.Node("Cast", {"m2"}, {"mf"}), "to", 1);
  b.Node("Add", {"d1", "d2"}, {"s"});
  b.Node("Add", {"s", "mf"}, {"y"});
  b.Output("y");
  auto model = LoadAndCompare(b);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Dropout"), 2);
}

TEST(CommonSubexpressionsTest, NodesWithSeveralOutputsMergeWhole) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  b.Int64Initializer("sizes", {2}, {1, 2});
  for (const char* side : {"a", "b"}) {
    const std::string s = side;
    testing::SetIntAttr(
        b.Node("Split", {"x", "sizes"}, {s + "_left", s + "_right"}), "axis",
        1);
  }
  b.Node("Sub", {"a_left", "b_left"}, {"l"});
  b.Node("Sub", {"a_right", "b_right"}, {"r"});
  testing::SetIntAttr(b.Node("Concat", {"l", "r"}, {"y"}), "axis", 1);
  b.Output("y");
  auto model = LoadAndCompare(b);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(CountOps(*model, "Split"), 1);
}

TEST(CommonSubexpressionsTest, RandomOperatorsAreNeverMerged) {
  // The engine runs no random operator, so the graph is optimized alone.
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 3});
  b.Node("RandomUniformLike", {"x"}, {"r1"});
  b.Node("RandomUniformLike", {"x"}, {"r2"});
  b.Node("Sub", {"r1", "r2"}, {"y"});
  b.Output("y");
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(b.Serialize()));
  ASSERT_TRUE(
      OptimizeGraph(OnlyThisPass().optimizer, 17, model.mutable_graph()).ok());
  EXPECT_EQ(model.graph().node_size(), 3);
}

}  // namespace
}  // namespace coalesce
