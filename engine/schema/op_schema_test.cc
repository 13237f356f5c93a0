#include "engine/schema/op_schema.h"

#include <memory>
#include <string>

#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/schema/conv_schema.h"
#include "engine/schema/gemm_schema.h"
#include "engine/schema/normalization_schema.h"
#include "engine/schema/softmax_schema.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using testing::OnnxModelBuilder;

const OpSchema& SchemaOf(const std::string& domain, const std::string& op) {
  const OpSchema* schema = SchemaRegistry::Builtin().Find(domain, op);
  EXPECT_NE(schema, nullptr) << op;
  return *schema;
}

absl::StatusOr<std::shared_ptr<const OpAttributes>> Resolve(
    const std::string& op, const NodeAttributes& attributes, int64_t opset,
    int num_inputs = 2, std::vector<bool> outputs_used = {true}) {
  return SchemaOf("", op).Resolve(
      SchemaNode{attributes, opset, num_inputs, std::move(outputs_used)});
}

NodeAttribute Int(int64_t v) {
  NodeAttribute a;
  a.kind = NodeAttribute::Kind::kInt;
  a.i = v;
  return a;
}

NodeAttribute String(const std::string& v) {
  NodeAttribute a;
  a.kind = NodeAttribute::Kind::kString;
  a.s = v;
  return a;
}

TEST(OpSchemaTest, SoftmaxDefaultsFollowTheOpset) {
  NodeAttributes none;
  auto old_form = Resolve("Softmax", none, /*opset=*/11);
  ASSERT_TRUE(old_form.ok()) << old_form.status();
  EXPECT_EQ(ResolvedAs<SoftmaxAttrs>(old_form->get())->axis, 1);
  EXPECT_TRUE(ResolvedAs<SoftmaxAttrs>(old_form->get())->legacy);
  auto new_form = Resolve("LogSoftmax", none, /*opset=*/13);
  ASSERT_TRUE(new_form.ok()) << new_form.status();
  EXPECT_EQ(ResolvedAs<SoftmaxAttrs>(new_form->get())->axis, -1);
  EXPECT_FALSE(ResolvedAs<SoftmaxAttrs>(new_form->get())->legacy);
  // Another family's struct is not there.
  EXPECT_EQ(ResolvedAs<GemmAttrs>(new_form->get()), nullptr);
}

TEST(OpSchemaTest, BadAttributesAreRefusedByName) {
  NodeAttributes attrs;
  attrs.Set("axis", String("one"));
  auto softmax = Resolve("Softmax", attrs, /*opset=*/13);
  EXPECT_EQ(softmax.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(softmax.status().message()), HasSubstr("'axis'"));

  NodeAttributes mish;
  mish.Set("activation", String("Mish"));
  auto gemm = SchemaOf(SchemaRegistry::kInternalDomain, "FusedGemm")
                  .Resolve(SchemaNode{mish, 17, 3, {true}});
  EXPECT_EQ(gemm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(gemm.status().message()),
              HasSubstr("unknown fused activation 'Mish'"));

  NodeAttributes layout;
  layout.Set("channels_last", Int(2));
  auto conv = Resolve("Conv", layout, /*opset=*/17);
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(conv.status().message()),
              HasSubstr("channels_last must be 0 or 1"));

  auto too_many = Resolve("Conv", NodeAttributes(), /*opset=*/17,
                          /*num_inputs=*/4);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("Conv takes at most 3 inputs"));
}

TEST(OpSchemaTest, LayerNormRefusesTheStatisticsOutputs) {
  auto both = Resolve("LayerNormalization", NodeAttributes(), /*opset=*/17,
                      /*num_inputs=*/3, {true, false, true});
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(both.status().message()),
              HasSubstr("output 2 (InvStdDev) is not supported"));
  EXPECT_TRUE(Resolve("LayerNormalization", NodeAttributes(), 17, 3,
                      {true, false, false})
                  .ok());
}

TEST(OpSchemaTest, GemmInfersFromResolvedAttributes) {
  NodeAttributes attrs;
  attrs.Set("transB", Int(1));
  auto resolved = Resolve("Gemm", attrs, /*opset=*/13);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const TensorInfo a{DataType::kFp32, {4, 8}, nullptr};
  const TensorInfo b{DataType::kFp32, {5, 8}, nullptr};
  TensorInfo out[1];
  const TensorInfo in[] = {a, b};
  ASSERT_TRUE(SchemaOf("", "Gemm").Infer(**resolved, in, out).ok());
  EXPECT_EQ(out[0].shape, (Shape{4, 5}));
  const TensorInfo wrong[] = {a, TensorInfo{DataType::kFp32, {8, 5}, nullptr}};
  absl::Status s = SchemaOf("", "Gemm").Infer(**resolved, wrong, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("inner dimensions differ"));
}

TEST(OpSchemaTest, PlansCarryTheAttributesTheGraphResolved) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2, 4}).Output("y", {2, 3});
  b.FloatInitializer("w", {3, 4}, std::vector<float>(12, 0.5f));
  testing::SetIntAttr(b.Node("Gemm", {"x", "w"}, {"h"}), "transB", 1);
  b.Node("Softmax", {"h"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto plan = BuildNeutralPlan(*model, {{2, 4}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ((*plan)->nodes.size(), 2u);
  const Graph& graph = (*model)->graph();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE((*plan)->nodes[i].resolved, nullptr);
    EXPECT_EQ((*plan)->nodes[i].resolved, graph.nodes[i].resolved.get());
  }
  const GemmAttrs* gemm = ResolvedAs<GemmAttrs>((*plan)->nodes[0].resolved);
  ASSERT_NE(gemm, nullptr);
  EXPECT_TRUE(gemm->trans_b);
}

TEST(OpSchemaTest, TheSchemaNamesTheNodeWhenItRefusesAtLoad) {
  OnnxModelBuilder b(/*opset=*/17);
  b.Input("x", {2, 4}).Output("y");
  testing::SetStringAttr(b.Node("Softmax", {"x"}, {"y"}, "soft"), "axis",
                         "last");
  auto model = b.Load();
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("node 'soft' (op 'Softmax'): attribute 'axis'"));
}

}  // namespace
}  // namespace coalesce
