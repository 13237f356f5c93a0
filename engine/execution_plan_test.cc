#include "engine/execution_plan.h"

#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

// A chain of 6 Relus over [B, 256]: liveness lets the arena hold only two
// intermediates at a time.
std::shared_ptr<const Model> ReluChain() {
  testing::OnnxModelBuilder b;
  b.Input("x", {-1, 256}).Output("y");
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string next = i == 5 ? "y" : "t" + std::to_string(i);
    b.Node("Relu", {prev}, {next});
    prev = next;
  }
  return *b.Load();
}

TEST(ExecutionPlanTest, ArenaReusesDeadTensors) {
  auto plan = ExecutionPlan::Build(ReluChain(), {{8, 256}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const size_t tensor_bytes = 8 * 256 * sizeof(float);
  const size_t table_bytes =
      ((*plan)->values().size() * sizeof(char*) + 63) / 64 * 64;
  // 5 intermediates in two blocks, after the table of tensor addresses.
  EXPECT_EQ((*plan)->arena_bytes(), table_bytes + 2 * tensor_bytes);
  EXPECT_EQ((*plan)->output_shape(0), (Shape{8, 256}));
  EXPECT_EQ((*plan)->input_byte_size(0), tensor_bytes);
}

TEST(ExecutionPlanTest, RejectsShapeNotFittingSignature) {
  auto model = ReluChain();
  auto plan = ExecutionPlan::Build(model, {{8, 255}});
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              ::testing::HasSubstr("input 'x'"));
  EXPECT_EQ(ExecutionPlan::Build(model, {{8, 256, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExecutionPlan::Build(model, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExecutionPlanTest, OutputThatIsAnInputOrInitializerIsCopied) {
  testing::OnnxModelBuilder b;
  b.Input("x", {2}).Output("x").Output("c").Output("r");
  b.FloatInitializer("c", {2}, {7, 8});
  b.Node("Relu", {"x"}, {"r"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2}, {-1, 1}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data, (std::vector<float>{-1, 1}));
  EXPECT_EQ((*out)[1].data, (std::vector<float>{7, 8}));
  EXPECT_EQ((*out)[2].data, (std::vector<float>{0, 1}));
}

// Nodes whose inputs are known while planning (here: Shape of an input, then
// int64 arithmetic on it) are computed once into the plan and skipped by
// Execute; they take no arena space beyond the table of tensor addresses.
TEST(ExecutionPlanTest, ShapeArithmeticIsComputedWhilePlanning) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 4}).Output("dims", {}, onnx::TensorProto::INT64);
  b.Int64Initializer("one", {1}, {1});
  b.Node("Shape", {"x"}, {"shape"});
  testing::SetIntAttr(b.Node("Concat", {"shape", "one"}, {"dims"}), "axis", 0);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto plan = ExecutionPlan::Build(*model, {{3, 4}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const size_t table_bytes = (*plan)->values().size() * sizeof(char*);
  EXPECT_EQ((*plan)->arena_bytes(), (table_bytes + 63) / 64 * 64);
  std::vector<char> arena((*plan)->arena_bytes());
  std::vector<float> x(12, 0.0f);
  int64_t dims[3] = {};
  const char* in[] = {reinterpret_cast<const char*>(x.data())};
  char* out[] = {reinterpret_cast<char*>(dims)};
  ASSERT_TRUE((*plan)->Execute(in, out, arena.data()).ok());
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 3),
            (std::vector<int64_t>{3, 4, 1}));
}

// A profile counts each run node; nodes computed while planning never run.
TEST(ExecutionPlanTest, ProfileTimesTheNodesThatRun) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 4}).Output("y", {-1, 4});
  b.Output("dims", {}, onnx::TensorProto::INT64);
  b.Node("Shape", {"x"}, {"dims"});  // node 0: folded
  b.Node("Relu", {"x"}, {"y"});      // node 1: runs
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->graph().nodes.size(), 2u);
  ASSERT_EQ((*model)->graph().nodes[1].op_type, "Relu");
  auto plan = ExecutionPlan::Build(*model, {{3, 4}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<char> arena((*plan)->arena_bytes() + 64);
  char* aligned =
      arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
  std::vector<float> x(12, -1.0f), y(12, 5.0f);
  int64_t dims[2] = {};
  const char* in[] = {reinterpret_cast<const char*>(x.data())};
  char* out[] = {reinterpret_cast<char*>(y.data()),
                 reinterpret_cast<char*>(dims)};
  NodeProfile profile((*model)->graph().nodes.size());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*plan)->Execute(in, out, aligned, {.profile = &profile}).ok());
  }
  EXPECT_EQ(profile.runs(0), 0);
  EXPECT_EQ(profile.nanos(0), 0);
  EXPECT_EQ(profile.runs(1), 3);
  EXPECT_GT(profile.nanos(1), 0);
  EXPECT_EQ(y, std::vector<float>(12, 0.0f));
  profile.Reset();
  EXPECT_EQ(profile.runs(1), 0);
  EXPECT_EQ(profile.nanos(1), 0);
}

TEST(ExecutionPlanTest, MlpMatchesNaiveComputation) {
  // Tiny MLP through the shared builder; compare with a hand computation.
  auto model =
      Model::LoadFromBytes(testing::BuildMlpModel(8, 16, 5, /*seed=*/3));
  ASSERT_TRUE(model.ok()) << model.status();
  auto x = testing::RandomFloats(3 * 8, 9);
  auto out = testing::RunModelOnce(*model, {{{3, 8}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, (Shape{3, 5}));
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int j = 0; j < 5; ++j) sum += (*out)[0].data[r * 5 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace coalesce
