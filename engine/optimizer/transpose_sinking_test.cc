// Transpose sinking into attention (graph_optimizer.h, pass 8): the
// Transpose before nn.MultiheadAttention's packed in-projection moves after
// it, Shape nodes that read the transposed value read it through a Gather
// of the permutation instead, the model computes what it did, and the
// attention fusion then reads q, k and v from the projection's result.
// Nothing moves when the projection's result has a reader outside
// attention, or for the CPU engine.
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

constexpr int64_t kB = 2, kS = 5, kH = 2, kD = 3, kE = kH * kD;

// x [B, S, E] -> Transpose to [S, B, E] -> x W + b, [S, B, 3E] -> the
// three entries as torchvision's MultiheadAttention export takes them ->
// attention -> y [B, S, E]; "dims" is the transposed value's shape (as
// float). With `extra_reader`, the projection's result is also summed into
// the model output "sum".
OnnxModelBuilder MhaModel(bool extra_reader) {
  OnnxModelBuilder b(17);
  b.Input("x", {kB, kS, kE});
  b.FloatInitializer("w", {kE, 3 * kE}, testing::RandomFloats(kE * 3 * kE, 7));
  b.FloatInitializer("bias", {3 * kE}, testing::RandomFloats(3 * kE, 8));
  b.FloatInitializer("scale", {}, {0.5f});
  b.Int64Initializer("sb3e", {4}, {kS, kB, 3, kE});
  b.Int64Initializer("split", {4}, {kB, kS, kH, kD});
  b.Int64Initializer("merge", {3}, {kB, kS, kE});
  testing::SetIntsAttr(b.Node("Transpose", {"x"}, {"xt"}), "perm", {1, 0, 2});
  b.Node("Shape", {"xt"}, {"xt_shape"});
  testing::SetIntAttr(b.Node("Cast", {"xt_shape"}, {"dims"}), "to",
                      onnx::TensorProto::FLOAT);
  b.Node("MatMul", {"xt", "w"}, {"proj0"});
  b.Node("Add", {"proj0", "bias"}, {"proj"});
  b.Node("Reshape", {"proj", "sb3e"}, {"p4"});
  testing::SetIntsAttr(b.Node("Transpose", {"p4"}, {"packed"}), "perm",
                       {2, 0, 1, 3});
  const char* const names[] = {"q", "k", "v"};
  const std::vector<int64_t> perms[] = {
      {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
  for (int64_t i = 0; i < 3; ++i) {
    const std::string n = names[i];
    b.Int64Initializer(n + "_entry", {}, {i});
    testing::SetIntAttr(b.Node("Gather", {"packed", n + "_entry"}, {n + "sb"}),
                        "axis", 0);
    testing::SetIntsAttr(b.Node("Transpose", {n + "sb"}, {n + "bs"}), "perm",
                         {1, 0, 2});
    b.Node("Reshape", {n + "bs", "split"}, {n + "4"});
    testing::SetIntsAttr(b.Node("Transpose", {n + "4"}, {n + "h"}), "perm",
                         perms[i]);
  }
  b.Node("MatMul", {"qh", "kh"}, {"s"});
  b.Node("Mul", {"s", "scale"}, {"ss"});
  testing::SetIntAttr(b.Node("Softmax", {"ss"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "vh"}, {"o"});
  testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                       {0, 2, 1, 3});
  b.Node("Reshape", {"ot", "merge"}, {"y"});
  b.Output("y").Output("dims");
  if (extra_reader) {
    b.Node("ReduceSum", {"proj"}, {"sum"});
    b.Output("sum");
  }
  return b;
}

std::string NameOf(const Model& model, int value) {
  return value >= 0 ? model.graph().value_names[value] : "";
}

// The node that writes `value` in `model`'s graph, or null.
const GraphNode* Writer(const Model& model, const std::string& value) {
  for (const GraphNode& n : model.graph().nodes)
    for (int out : n.outputs)
      if (NameOf(model, out) == value) return &n;
  return nullptr;
}

// The plan node that writes value `value`, or null.
const PlanNode* PlanWriter(const NeutralPlan& plan, int value) {
  for (const PlanNode& n : plan.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end())
      return &n;
  return nullptr;
}

// The one dense layer (FusedMatMul by "w") of `model`.
const GraphNode* Projection(const Model& model) {
  for (const GraphNode& n : model.graph().nodes)
    if (n.op_type == "FusedMatMul") return &n;
  return nullptr;
}

// `b` loaded for a device and without rewrites, compared on the CPU.
std::shared_ptr<const Model> LoadForDeviceAndCompare(
    const OnnxModelBuilder& b) {
  return testing::LoadOptimizedAndCompare(
      b.Serialize(), ModelOptions::ForDevice(),
      {{{kB, kS, kE}, testing::RandomFloats(kB * kS * kE, 1)}});
}

TEST(TransposeSinkingTest, ProjectionReadsRowsAndAttentionReadsItInPlace) {
  auto model = LoadForDeviceAndCompare(MhaModel(/*extra_reader=*/false));
  ASSERT_NE(model, nullptr);
  const GraphNode* proj = Projection(*model);
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(NameOf(*model, proj->inputs[0]), "x");  // the Transpose follows
  const GraphNode* shape = Writer(*model, "xt_shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->op_type, "Gather");  // of Shape(x), by the permutation
  auto plan = MakeNeutralPlanner(model)({{kB, kS, kE}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<AttentionSite> sites = FindAttention(**plan);
  ASSERT_EQ(sites.size(), 1u);
  const AttentionSite& s = sites[0];
  // q, k and v are views of what the projection writes, [B, S, 3E] rows.
  EXPECT_EQ(s.q.value, s.k.value);
  EXPECT_EQ(s.q.value, s.v.value);
  const PlanNode* writer = PlanWriter(**plan, s.q.value);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(*writer->op_type, "FusedMatMul");
  EXPECT_EQ(s.k.offset, kE);
  EXPECT_EQ(s.q.strides[0], kS * 3 * kE);  // batch
  EXPECT_EQ(s.q.strides[2], 3 * kE);       // position
  for (int n : s.nodes) {
    const std::string& op = *(*plan)->nodes[n].op_type;
    EXPECT_NE(op, "FusedMatMul");
    EXPECT_NE(op, "Shape");
  }
}

TEST(TransposeSinkingTest, ProjectionWithAnotherReaderKeepsItsTranspose) {
  auto model = LoadForDeviceAndCompare(MhaModel(/*extra_reader=*/true));
  ASSERT_NE(model, nullptr);
  const GraphNode* proj = Projection(*model);
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(NameOf(*model, proj->inputs[0]), "xt");
  const GraphNode* shape = Writer(*model, "xt_shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->op_type, "Shape");
}

TEST(TransposeSinkingTest, TheCpuEngineKeepsTheTranspose) {
  auto model = Model::LoadFromBytes(MhaModel(false).Serialize(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  const GraphNode* proj = Projection(**model);
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(NameOf(**model, proj->inputs[0]), "xt");
}

}  // namespace
}  // namespace coalesce
