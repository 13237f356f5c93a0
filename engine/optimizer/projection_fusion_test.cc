// Shared-input projection fusion (graph_optimizer.h, pass 7): attention's
// Q, K and V projections of one input become one FusedMatMul and a Split,
// the optimized model computes what the unoptimized one does, the attention
// fusion then reads the Split in place, and projections that do not feed
// attention's products are left alone.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/attention_pattern.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/optimizer/graph_optimizer.h"
#include "engine/testing/onnx_model_builder.h"
#include "engine/testing/optimizer_compare.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

constexpr int64_t kB = 2, kS = 4, kH = 2, kD = 3, kE = kH * kD;

// y = attention(x Wq + bq, x Wk, x Wv + bv) merged back to [B, S, E], and
// z = x Wo + bo (a dense layer of the same input that is no attention
// operand). With attention false, the three projections are added
// together instead of attending.
OnnxModelBuilder ProjectionModel(bool attention, int64_t opset) {
  OnnxModelBuilder b(opset);
  b.Input("x", {kB, kS, kE});
  uint64_t seed = 10;
  for (const char* w : {"wq", "wk", "wv", "wo"})
    b.FloatInitializer(w, {kE, kE}, testing::RandomFloats(kE * kE, ++seed));
  for (const char* bias : {"bq", "bv", "bo"})
    b.FloatInitializer(bias, {kE}, testing::RandomFloats(kE, ++seed));
  b.Node("MatMul", {"x", "wq"}, {"q0"});
  b.Node("Add", {"q0", "bq"}, {"q"});
  b.Node("MatMul", {"x", "wk"}, {"k"});
  b.Node("MatMul", {"x", "wv"}, {"v0"});
  b.Node("Add", {"v0", "bv"}, {"v"});
  b.Node("MatMul", {"x", "wo"}, {"z0"});
  b.Node("Add", {"z0", "bo"}, {"z"});
  if (!attention) {
    b.Node("Add", {"q", "k"}, {"qk"});
    b.Node("Add", {"qk", "v"}, {"y"});
  } else {
    b.Int64Initializer("split", {4}, {kB, kS, kH, kD});
    b.Int64Initializer("merge", {3}, {kB, kS, kE});
    b.FloatInitializer("scale", {}, {0.5f});
    auto heads = [&](const std::string& x, const std::vector<int64_t>& perm) {
      b.Node("Reshape", {x, "split"}, {x + "4"});
      testing::SetIntsAttr(b.Node("Transpose", {x + "4"}, {x + "t"}), "perm",
                           perm);
      return x + "t";
    };
    b.Node("MatMul", {heads("q", {0, 2, 1, 3}), heads("k", {0, 2, 3, 1})},
           {"s"});
    b.Node("Mul", {"s", "scale"}, {"ss"});
    testing::SetIntAttr(b.Node("Softmax", {"ss"}, {"p"}), "axis", -1);
    b.Node("MatMul", {"p", heads("v", {0, 2, 1, 3})}, {"o"});
    testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                         {0, 2, 1, 3});
    b.Node("Reshape", {"ot", "merge"}, {"y"});
  }
  b.Output("y").Output("z");
  return b;
}

int Count(const Model& model, const std::string& op) {
  return static_cast<int>(
      std::count_if(model.graph().nodes.begin(), model.graph().nodes.end(),
                    [&](const GraphNode& n) { return n.op_type == op; }));
}

// `b` loaded with every pass and without, compared on the CPU.
std::shared_ptr<const Model> LoadBothAndCompare(const OnnxModelBuilder& b) {
  return testing::LoadOptimizedAndCompare(
      b.Serialize(), {OptimizerOptions{}},
      {{{kB, kS, kE}, testing::RandomFloats(kB * kS * kE, 1)}});
}

TEST(ProjectionFusionTest, QkvBecomeOneGemmThatAttentionReadsInPlace) {
  for (int64_t opset : {11, 17}) {  // Split's sizes: attribute, then input
    SCOPED_TRACE(opset);
    auto model = LoadBothAndCompare(ProjectionModel(/*attention=*/true, opset));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(Count(*model, "Split"), 1);
    // The packed Q/K/V product and z's dense layer.
    EXPECT_EQ(Count(*model, "FusedMatMul"), 2);
    auto plan = MakeNeutralPlanner(model)({{kB, kS, kE}});
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::vector<AttentionSite> sites = FindAttention(**plan);
    ASSERT_EQ(sites.size(), 1u);
    const AttentionSite& s = sites[0];
    EXPECT_EQ(s.q.value, s.k.value);
    EXPECT_EQ(s.q.value, s.v.value);
    EXPECT_EQ(s.k.offset, kE);
    EXPECT_EQ(s.v.offset, 2 * kE);
    EXPECT_FLOAT_EQ(s.scale, 0.5f);
  }
}

TEST(ProjectionFusionTest, ProjectionsOutsideAttentionStaySeparate) {
  auto model = LoadBothAndCompare(ProjectionModel(/*attention=*/false, 17));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Count(*model, "Split"), 0);
  EXPECT_EQ(Count(*model, "FusedMatMul") + Count(*model, "MatMul"), 4);
}

TEST(ProjectionFusionTest, RealExportsPackTheirQkv) {
  // One packed product per layer (2 layers) in each export; GPT-2 packs
  // its own (Conv1D), and this pass leaves it.
  const char* const kModels[] = {
      "bert_tiny__torchscript", "bert_tiny__dynamo", "roberta_tiny__dynamo",
      "clip_text_tiny__torchscript", "distilbert_tiny__torchscript"};
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    auto model = Model::LoadFromFile(
        std::string(COALESCE_CORPUS_DIR) + "/" + name + "/model.onnx", {});
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(Count(**model, "Split"), 2);
  }
}

}  // namespace
}  // namespace coalesce
