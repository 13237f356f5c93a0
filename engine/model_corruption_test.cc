// Corrupted and hostile models: every one must fail to load (or to plan)
// with a clean error, and none may crash. Also built with AddressSanitizer
// by scripts/test (see docs/engine.md), which turns an out-of-bounds read
// while parsing or planning into a failure.
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu_executor.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using testing::OnnxModelBuilder;

// A small CNN using the ops most likely to meet odd shapes: Conv, BN, Relu,
// MaxPool, Flatten, Gemm, Softmax.
OnnxModelBuilder SmallCnn() {
  OnnxModelBuilder b(13);
  b.Input("x", {-1, 3, 8, 8}).Output("y", {-1, 10});
  b.FloatInitializer("w", {4, 3, 3, 3}, testing::RandomFloats(108, 1));
  b.FloatInitializer("b", {4}, testing::RandomFloats(4, 2));
  for (const char* name : {"s", "bb", "m"})
    b.FloatInitializer(name, {4}, testing::RandomFloats(4, 3));
  b.FloatInitializer("v", {4}, {1, 2, 3, 4});
  b.FloatInitializer("fc", {10, 64}, testing::RandomFloats(640, 4));
  testing::SetIntsAttr(b.Node("Conv", {"x", "w", "b"}, {"c"}), "pads",
                       {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"n"});
  b.Node("Relu", {"n"}, {"r"});
  auto& pool = b.Node("MaxPool", {"r"}, {"p"});
  testing::SetIntsAttr(pool, "kernel_shape", {2, 2});
  testing::SetIntsAttr(pool, "strides", {2, 2});
  b.Node("Flatten", {"p"}, {"f"});
  testing::SetIntAttr(b.Node("Gemm", {"f", "fc"}, {"g"}), "transB", 1);
  b.Node("Softmax", {"g"}, {"y"});
  return b;
}

// Loads `bytes` and, if that works, plans and runs it on a [2,3,8,8] input.
// Returns the first error, or OK. Never crashes on a correct engine.
absl::Status LoadAndRun(const std::string& bytes) {
  auto model = Model::LoadFromBytes(bytes);
  if (!model.ok()) return model.status();
  std::vector<Shape> shapes;
  for (const TensorSpec& in : (*model)->signature().inputs) {
    Shape s = in.dims;
    for (int64_t& d : s) d = d < 0 ? 2 : d;
    shapes.push_back(s);
  }
  auto plan = ExecutionPlan::Build(*model, shapes);
  if (!plan.ok()) return plan.status();
  if ((*plan)->arena_bytes() > (size_t{1} << 30))
    return absl::ResourceExhaustedError("arena too large for the test");
  std::vector<std::vector<char>> inputs, outputs;
  std::vector<const char*> in_ptrs;
  std::vector<char*> out_ptrs;
  for (int i = 0; i < (*plan)->num_inputs(); ++i) {
    inputs.emplace_back((*plan)->input_byte_size(i), 0);
    in_ptrs.push_back(inputs.back().data());
  }
  for (int i = 0; i < (*plan)->num_outputs(); ++i) {
    outputs.emplace_back((*plan)->output_byte_size(i) + 1, 0);
    out_ptrs.push_back(outputs.back().data());
  }
  std::vector<char> arena((*plan)->arena_bytes() + 64);
  char* aligned =
      arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
  return (*plan)->Execute(in_ptrs, out_ptrs, aligned);
}

TEST(ModelCorruptionTest, TheUncorruptedModelRuns) {
  EXPECT_TRUE(LoadAndRun(SmallCnn().Serialize()).ok());
}

// Every prefix of the file, at a step that keeps the test short.
TEST(ModelCorruptionTest, TruncatedFilesFailCleanly) {
  const std::string bytes = SmallCnn().Serialize();
  int failures = 0;
  for (size_t len = 0; len < bytes.size(); len += 7) {
    absl::Status s = LoadAndRun(bytes.substr(0, len));
    failures += !s.ok();
  }
  // Only a cut exactly between top-level fields can still parse, and then
  // the graph or the opset is missing; nearly all prefixes must fail.
  EXPECT_GE(failures, static_cast<int>(bytes.size() / 7) - 2);
}

TEST(ModelCorruptionTest, RandomByteFlipsNeverCrash) {
  const std::string bytes = SmallCnn().Serialize();
  std::mt19937 rng(20261122);
  int loaded = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + trial % 8;
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % mutated.size();
      mutated[at] = static_cast<char>(rng() & 0xff);
    }
    loaded += LoadAndRun(mutated).ok();
  }
  // Flips inside float weights still give a valid model; the rest must have
  // ended in an error (a crash fails the test, and ASan catches bad reads).
  EXPECT_LT(loaded, 400);
}

TEST(ModelCorruptionTest, InitializerWithWrongByteCountFails) {
  OnnxModelBuilder b = SmallCnn();
  onnx::TensorProto* w = b.proto().mutable_graph()->mutable_initializer(0);
  w->set_raw_data(w->raw_data().substr(0, 100));
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("w"));
}

// INT32 weights of the right byte count: the file is consistent, the Conv
// refuses the type.
TEST(ModelCorruptionTest, WrongTensorTypeFails) {
  OnnxModelBuilder b = SmallCnn();
  b.proto().mutable_graph()->mutable_initializer(0)->set_data_type(
      onnx::TensorProto::INT32);
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("Conv"));
}

TEST(ModelCorruptionTest, GraphCycleFails) {
  OnnxModelBuilder b = SmallCnn();
  // Make the Conv read the Relu's output: Conv -> BN -> Relu -> Conv.
  b.proto().mutable_graph()->mutable_node(0)->set_input(0, "r");
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("cycle"));
}

TEST(ModelCorruptionTest, MissingInitializerFails) {
  OnnxModelBuilder b = SmallCnn();
  b.proto().mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'w'"));
}

TEST(ModelCorruptionTest, AbsurdInitializerShapeFails) {
  OnnxModelBuilder b = SmallCnn();
  onnx::TensorProto* w = b.proto().mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int i = 0; i < 4; ++i) w->add_dims(int64_t{1} << 20);
  EXPECT_EQ(LoadAndRun(b.Serialize()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelCorruptionTest, AbsurdComputedShapesFailAtPlanning) {
  OnnxModelBuilder b(13);
  b.Input("x", {1}).Output("y");
  b.Int64Initializer("shape", {3}, {int64_t{1} << 30, int64_t{1} << 30, 16});
  b.Node("ConstantOfShape", {"shape"}, {"big"});
  b.Node("Add", {"x", "big"}, {"y"});
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("larger than 1 TiB"));
}

TEST(ModelCorruptionTest, NegativeAndHugeInputDimsFail) {
  OnnxModelBuilder b(13);
  b.Input("x", {int64_t{1} << 40, int64_t{1} << 40}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  EXPECT_EQ(LoadAndRun(b.Serialize()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelCorruptionTest, NodeWithTooFewInputsFails) {
  OnnxModelBuilder b = SmallCnn();
  onnx::NodeProto* conv = b.proto().mutable_graph()->mutable_node(0);
  conv->mutable_input()->DeleteSubrange(1, 2);
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("Conv"));
}

// Regression tests for what tests/fuzz/onnx_model_fuzzer found or its
// review pointed at: each used to crash or misbehave.

// dims whose byte count overflows size_t used to wrap to a small size and
// load; a later Gather read past it.
TEST(ModelCorruptionTest, InitializerWhoseByteSizeOverflowsFails) {
  OnnxModelBuilder b(13);
  b.Input("i", {1}, onnx::TensorProto::INT64).Output("y");
  b.RawInitializer("t", onnx::TensorProto::FLOAT, {int64_t{1} << 62}, nullptr,
                   0);
  b.Node("Gather", {"t", "i"}, {"y"});
  absl::Status s = Model::LoadFromBytes(b.Serialize()).status();
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'t'"));
}

// A shape its stored values cannot fill is refused before 4 GiB are
// reserved for it.
TEST(ModelCorruptionTest, InitializerLargerThanItsDataFailsBeforeAllocating) {
  OnnxModelBuilder b(13);
  b.Input("x", {1}).Output("y");
  const float one = 1;
  b.RawInitializer("t", onnx::TensorProto::FLOAT, {int64_t{1} << 30}, &one,
                   sizeof(one));
  b.Node("Add", {"x", "t"}, {"y"});
  absl::Status s = Model::LoadFromBytes(b.Serialize()).status();
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("stores fewer"));
}

// A graph input also defined by a Constant node: the graph skips it, and so
// must the signature, or planning pairs inputs with the wrong values (it
// read past the graph's inputs).
TEST(ModelCorruptionTest, GraphInputShadowedByAConstantNodeIsNotAnInput) {
  OnnxModelBuilder b(13);
  b.Input("c", {2}).Input("x", {2}).Output("y", {2});
  auto& constant = b.Node("Constant", {}, {"c"});
  onnx::AttributeProto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_float_data(1);
  value->mutable_t()->add_float_data(2);
  b.Node("Add", {"x", "c"}, {"y"});
  ModelOptions options;
  options.optimizer = OptimizerOptions::None();
  auto model = Model::LoadFromBytes(b.Serialize(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->signature().inputs.size(), 1u);
  EXPECT_EQ((*model)->signature().inputs[0].name, "x");
  auto plan = ExecutionPlan::Build(*model, std::vector<Shape>{{2}});
  EXPECT_TRUE(plan.ok()) << plan.status();
}

TEST(ModelCorruptionTest, AbsurdWindowAttributesFail) {
  OnnxModelBuilder depth(13);
  depth.Input("x", {1, 4, 2, 2}).Output("y");
  testing::SetIntAttr(depth.Node("DepthToSpace", {"x"}, {"y"}), "blocksize",
                      int64_t{1} << 32);
  absl::Status s = LoadAndRun(depth.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("blocksize"));

  OnnxModelBuilder conv = SmallCnn();
  testing::SetIntAttr(*conv.proto().mutable_graph()->mutable_node(0), "group",
                      int64_t{1} << 40);
  s = LoadAndRun(conv.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("group"));

  OnnxModelBuilder pool = SmallCnn();
  testing::SetIntsAttr(*pool.proto().mutable_graph()->mutable_node(3),
                       "dilations", {int64_t{1} << 62, 1});
  s = LoadAndRun(pool.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("dilations"));
}

TEST(ModelCorruptionTest, RangeWithANanOrHugeCountFails) {
  for (float limit : {std::nanf(""), 1e30f}) {
    OnnxModelBuilder b(13);
    b.Input("x", {1}).Output("y");
    b.FloatInitializer("start", {}, {0});
    b.FloatInitializer("limit", {}, {limit});
    b.FloatInitializer("delta", {}, {1});
    b.Node("Range", {"start", "limit", "delta"}, {"r"});
    b.Node("Add", {"x", "r"}, {"y"});
    absl::Status s = LoadAndRun(b.Serialize());
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s << limit;
    EXPECT_THAT(std::string(s.message()), HasSubstr("Range")) << limit;
  }
}

// int64 Range across the whole type: start + i * delta overflowed (UBSan)
// although every value fits.
TEST(ModelCorruptionTest, Int64RangeAcrossTheTypeIsExact) {
  OnnxModelBuilder b(13);
  b.Input("x", {4}, onnx::TensorProto::INT64).Output("y", {4});
  const int64_t delta = int64_t{1} << 62;
  b.Int64Initializer("start", {}, {INT64_MIN});
  b.Int64Initializer("limit", {}, {INT64_MAX});
  b.Int64Initializer("delta", {}, {delta});
  b.Node("Range", {"start", "limit", "delta"}, {"r"});
  b.Node("Add", {"x", "r"}, {"y"});
  ModelOptions options;
  options.optimizer = OptimizerOptions::None();
  auto model = Model::LoadFromBytes(b.Serialize(), options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto plan = ExecutionPlan::Build(*model, std::vector<Shape>{{4}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<int64_t> x = {0, 0, 0, 0}, y(4);
  std::vector<char> arena((*plan)->arena_bytes() + 64);
  char* aligned =
      arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
  std::vector<const char*> in = {reinterpret_cast<const char*>(x.data())};
  std::vector<char*> out = {reinterpret_cast<char*>(y.data())};
  ASSERT_TRUE((*plan)->Execute(in, out, aligned).ok());
  EXPECT_EQ(y, (std::vector<int64_t>{INT64_MIN, -delta, 0, delta}));
}

// A few bytes of ConstantOfShape asking for 1 GiB: left for run time, not
// materialized at load (which took the memory and copied it once more).
TEST(ModelCorruptionTest, ExpandingConstantsAreNotFoldedAtLoad) {
  OnnxModelBuilder b(13);
  b.Input("x", {1}).Output("y");
  b.Int64Initializer("shape", {1}, {int64_t{1} << 28});
  b.Node("ConstantOfShape", {"shape"}, {"big"});
  b.Node("Add", {"x", "big"}, {"y"});
  auto model = Model::LoadFromBytes(b.Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  bool kept = false;
  for (const GraphNode& node : (*model)->graph().nodes)
    kept |= node.op_type == "ConstantOfShape";
  EXPECT_TRUE(kept);
}

// Found by onnx_model_fuzzer: a Reshape target whose element count
// overflows int64 (UBSan: signed overflow while counting).
TEST(ModelCorruptionTest, ReshapeToAnOverflowingShapeFails) {
  OnnxModelBuilder b(13);
  b.Input("x", {2, 2}).Output("y");
  b.Int64Initializer("shape", {3},
                     {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40});
  b.Node("Reshape", {"x", "shape"}, {"y"});
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("more elements than int64"));
}

// Found by onnx_model_fuzzer: the LayerNorm pattern read output 0 of a Div
// that had none (the optimizer sees the file before it is validated).
TEST(ModelCorruptionTest, NodeWithoutOutputsFails) {
  OnnxModelBuilder b(13);
  b.Input("x", {2}).Output("y");
  b.Node("Div", {"x", "x"}, {});
  b.Node("Relu", {"x"}, {"y"});
  absl::Status s = LoadAndRun(b.Serialize());
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no outputs"));
}

}  // namespace
}  // namespace coalesce
