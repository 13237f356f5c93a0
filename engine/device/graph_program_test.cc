// GraphProgram on the simulated device: whole ONNX models through the
// pipelined executor, every output against the CPU engine's on random
// inputs; the load-time refusal naming every node the device cannot run;
// out of device memory; no memory race between steps (the device's check).
#include "engine/device/graph_program.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/device/pipelined_executor.h"
#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"
#include "engine/device/testing/device_test_cases.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::coalesce::testing::HostTensor;
using ::coalesce::testing::OnnxModelBuilder;
using ::coalesce::testing::SetFloatAttr;
using ::coalesce::testing::SetIntAttr;
using ::coalesce::testing::SetIntsAttr;
using ::testing::AllOf;
using ::testing::HasSubstr;

#define ASSERT_OK_AND_LOADED(...)            \
  do {                                       \
    absl::Status loaded = Load(__VA_ARGS__); \
    ASSERT_TRUE(loaded.ok()) << loaded;      \
  } while (0)

GraphProgramSource SourceOf(const std::shared_ptr<const Model>& model) {
  return {model->signature(), MakeNeutralPlanner(model), ModelNodes(*model)};
}

HostTensor RandomTensor(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  ModelSignature one_float;
  one_float.inputs.push_back({"x", DataType::kFp32, shape});
  return {
      shape,
      ::coalesce::testing::RandomInputs(one_float, {shape})[0].values<float>()};
}

class GraphProgramTest : public ::testing::Test {
 protected:
  absl::Status Load(const OnnxModelBuilder& builder,
                    SimulatedDevice::Options options = {},
                    ModelOptions model_options = ModelOptions::ForDevice(),
                    GraphProgramOptions program_options = {}) {
    auto model = Model::LoadFromBytes(builder.Serialize(), model_options);
    if (!model.ok()) return model.status();
    model_ = *model;
    device_ = std::make_shared<SimulatedDevice>(options);
    auto program =
        CreateGraphProgram(device_, CreateSimulatedKernels(device_.get()),
                           SourceOf(model_), program_options);
    if (!program.ok()) return program.status();
    auto executor = CreatePipelinedExecutor(device_, *std::move(program),
                                            PipelinedExecutorOptions{2});
    if (!executor.ok()) return executor.status();
    executor_ = *std::move(executor);
    return absl::OkStatus();
  }

  void TearDown() override {
    executor_.reset();
    if (device_ != nullptr) {
      EXPECT_THAT(device_->problems(), ::testing::IsEmpty());
    }
  }

  // Runs `inputs` on the device and on the CPU engine and compares.
  void ExpectMatchesCpu(const std::vector<HostTensor>& inputs,
                        float tolerance = 1e-5f, int slot_index = 0) {
    std::vector<::coalesce::testing::TypedTensor> typed;
    for (const HostTensor& t : inputs) {
      typed.push_back(
          ::coalesce::testing::MakeTyped(DataType::kFp32, t.shape, t.data));
    }
    auto device = ::coalesce::testing::RunBatch(*executor_, model_->signature(),
                                                slot_index, typed);
    ASSERT_TRUE(device.ok()) << device.status();
    auto cpu = ::coalesce::testing::RunModelTyped(model_, typed);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_EQ(::coalesce::testing::CompareOutputs(*device, *cpu, tolerance),
              "");
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<SimulatedDevice> device_;
  std::unique_ptr<PipelinedExecutor> executor_;
};

// Every device test case (one per operator variant, and whole models) on the
// simulated device, with the CUDA kernels' per-element math.
class DeviceCaseTest
    : public ::testing::TestWithParam<::coalesce::testing::DeviceTestCase> {};

// Runs case `c` on a fresh simulated device through a program with
// `options`: "" when every output matches the CPU engine's and the device
// saw no race.
std::string RunCase(const ::coalesce::testing::DeviceTestCase& c,
                    GraphProgramOptions options, bool channels_last = false) {
  auto model = ::coalesce::testing::LoadCase(c, channels_last);
  if (!model.ok()) return model.status().ToString();
  auto device = std::make_shared<SimulatedDevice>();
  auto program = CreateGraphProgram(
      device, CreateSimulatedKernels(device.get()), SourceOf(*model), options);
  if (!program.ok()) return program.status().ToString();
  auto executor = CreatePipelinedExecutor(device, *std::move(program),
                                          PipelinedExecutorOptions{2});
  if (!executor.ok()) return executor.status().ToString();
  std::string problems =
      ::coalesce::testing::CheckAgainstCpu(c, *model, **executor);
  executor->reset();
  for (const std::string& p : device->problems()) problems += "; " + p;
  return problems;
}

TEST_P(DeviceCaseTest, MatchesCpu) { EXPECT_EQ(RunCase(GetParam(), {}), ""); }

// FP16 mode (gpu_precision "fp16"): products on float16 operands, which keep
// 10 mantissa bits as TF32's do; the GPU tests use the same tolerance.
constexpr float kFp16Tolerance = 2e-2f;

TEST_P(DeviceCaseTest, MatchesCpuInFp16) {
  ::coalesce::testing::DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kFp16Tolerance);
  EXPECT_EQ(RunCase(c, {.activations = DeviceFloat::kHalf}), "");
}

// As the server runs FP16 (gpu_layout's default): NHWC convolutions,
// pooling and BatchNormalization, float16 activations between operators.
TEST_P(DeviceCaseTest, MatchesCpuInFp16Nhwc) {
  ::coalesce::testing::DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kFp16Tolerance);
  EXPECT_EQ(RunCase(c, {.activations = DeviceFloat::kHalf},
                    /*channels_last=*/true),
            "");
}

// BF16 mode (gpu_precision "bf16"): bfloat16 operands and activations keep
// 7 mantissa bits, 8x coarser steps than float16's. Measured on these
// cases' random inputs: errors up to 0.05 in GEMMs and convolutions, and in
// qdq_conv (terms up to 10 summing to small values) past 0.08 about once
// in 150 runs; none past 0.1 in 300 runs of every case.
constexpr float kBf16Tolerance = 1e-1f;

// As the server runs BF16: NHWC (gpu_layout's default with 16-bit modes),
// bfloat16 activations between operators.
TEST_P(DeviceCaseTest, MatchesCpuInBf16Nhwc) {
  ::coalesce::testing::DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kBf16Tolerance);
  EXPECT_EQ(RunCase(c, {.activations = DeviceFloat::kBFloat16},
                    /*channels_last=*/true),
            "");
}

TEST_P(DeviceCaseTest, MatchesCpuNhwc) {
  EXPECT_EQ(RunCase(GetParam(), {}, /*channels_last=*/true), "");
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, DeviceCaseTest,
    ::testing::ValuesIn(::coalesce::testing::DeviceTestCases()),
    [](const ::testing::TestParamInfo<::coalesce::testing::DeviceTestCase>&
           info) { return info.param.name; });

TEST_F(GraphProgramTest, MlpMatchesCpuAtEveryBatchSize) {
  OnnxModelBuilder builder;
  builder.proto().ParseFromString(
      ::coalesce::testing::BuildMlpModel(24, 48, 10, 7));
  ASSERT_OK_AND_LOADED(builder);
  int slot = 0;
  for (int64_t batch : {1, 5, 64, 5, 1}) {  // plans are reused on the way back
    ExpectMatchesCpu({RandomTensor({batch, 24})}, 1e-5f, slot);
    slot = 1 - slot;
  }
}

// Gemm without fusion (alpha, a [M, N] C with beta 1, transA), MatMul in
// its batched and broadcast forms, the activations, broadcast arithmetic,
// Softmax, Transpose, Concat and views, with the optimizer on and off.
OnnxModelBuilder OperatorModel() {
  OnnxModelBuilder b(20);
  b.Input("x", {-1, 4, 6});
  b.Input("y", {-1, 6, 4});
  b.FloatInitializer("w", {6, 5}, ::coalesce::testing::RandomFloats(30, 1));
  b.FloatInitializer("bias", {5}, ::coalesce::testing::RandomFloats(5, 2));
  b.FloatInitializer("row", {1, 4}, ::coalesce::testing::RandomFloats(4, 3));
  b.FloatInitializer("lo", {}, {-0.5f});
  b.FloatInitializer("hi", {}, {0.75f});
  b.FloatInitializer("gw", {5, 3}, ::coalesce::testing::RandomFloats(15, 4));
  b.FloatInitializer("gc", {4, 3}, ::coalesce::testing::RandomFloats(12, 5));
  b.Int64Initializer("flat", {2}, {-1, 5});
  b.Node("MatMul", {"x", "w"}, {"xw"});   // [N,4,5], one GEMM
  b.Node("Add", {"xw", "bias"}, {"xb"});  // bias, fused or not
  b.Node("Gelu", {"xb"}, {"g"}, "gelu");
  b.Node("MatMul", {"x", "y"}, {"xy"});  // [N,4,4] batched
  b.Node("Sub", {"xy", "row"}, {"s"});
  b.Node("Sigmoid", {"s"}, {"sg"});
  b.Node("Mul", {"sg", "s"}, {"m"});
  b.Node("Div", {"m", "hi"}, {"d"});
  b.Node("Clip", {"d", "lo", "hi"}, {"c"});
  SetFloatAttr(b.Node("LeakyRelu", {"c"}, {"lr"}), "alpha", 0.2f);
  b.Node("Tanh", {"lr"}, {"t"});
  b.Node("Erf", {"t"}, {"e"});
  SetIntAttr(b.Node("Concat", {"g", "e"}, {"cat"}), "axis", -1);  // [N,4,9]
  SetIntsAttr(b.Node("Transpose", {"cat"}, {"tr"}), "perm", {0, 2, 1});
  b.Node("Softmax", {"tr"}, {"sm"});                    // [N,9,4], last axis
  b.Node("Reshape", {"g", "flat"}, {"g2"});             // view: [N*4,5]
  auto& gemm = b.Node("Gemm", {"g2", "gw"}, {"gemm"});  // [N*4,3]
  SetFloatAttr(gemm, "alpha", 0.5f);
  b.Node("Relu", {"gemm"}, {"r"});
  b.Node("Reshape", {"r", "flat_out"}, {"out2"});
  b.Int64Initializer("flat_out", {2}, {-1, 3});
  b.Node("Transpose", {"gw"}, {"gwt"});                    // [3,5] constant
  auto& gemm2 = b.Node("Gemm", {"gwt", "gw"}, {"small"});  // [3,3]
  SetIntAttr(gemm2, "transA", 0);
  b.Node("Identity", {"x"}, {"x_again"});
  b.Output("sm");
  b.Output("out2");
  b.Output("x_again");
  b.Output("small");
  return b;
}

// After warm-up (each shape set once on each slot), batches allocate no
// device or pinned memory: plans, the arena, staging buffers and constants
// are all reused; in FP16 mode too (float16 weights, scratch in the arena).
TEST_F(GraphProgramTest, SteadyStateAllocatesNoDeviceMemory) {
  OnnxModelBuilder builder;
  builder.proto().ParseFromString(
      ::coalesce::testing::BuildMlpModel(24, 48, 10, 7));
  for (bool fp16 : {false, true}) {
    ASSERT_OK_AND_LOADED(
        builder, {}, ModelOptions::ForDevice(),
        GraphProgramOptions{.activations = fp16 ? DeviceFloat::kHalf
                                                : DeviceFloat::kFloat});
    const float tolerance = fp16 ? 2e-2f : 1e-5f;
    const int64_t batches[] = {8, 3, 8, 1};
    for (int slot : {0, 1}) {
      for (int64_t batch : batches)
        ExpectMatchesCpu({RandomTensor({batch, 24})}, tolerance, slot);
    }
    const int64_t warm = device_->allocation_count();
    for (int round = 0; round < 5; ++round) {
      for (int64_t batch : batches) {
        ExpectMatchesCpu({RandomTensor({batch, 24})}, tolerance, round % 2);
      }
    }
    EXPECT_EQ(device_->allocation_count(), warm) << "fp16 " << fp16;
    executor_.reset();
  }
}

// FP16 weights are converted and uploaded once per program: a batch size
// that binds a new plan allocates nothing for them (the MLP's weights are
// the only derived constants; batch 2's arena fits in batch 8's).
TEST_F(GraphProgramTest, Fp16WeightsAreSharedByThePlansOfEveryBatchSize) {
  OnnxModelBuilder builder;
  builder.proto().ParseFromString(
      ::coalesce::testing::BuildMlpModel(24, 48, 10, 7));
  ASSERT_OK_AND_LOADED(builder, {}, ModelOptions::ForDevice(),
                       GraphProgramOptions{.activations = DeviceFloat::kHalf});
  ExpectMatchesCpu({RandomTensor({8, 24})}, 2e-2f);
  const int64_t after_first_plan = device_->allocation_count();
  ExpectMatchesCpu({RandomTensor({2, 24})}, 2e-2f);
  EXPECT_EQ(device_->allocation_count(), after_first_plan);
}

OnnxModelBuilder SmallMlp() {
  OnnxModelBuilder builder;
  builder.proto().ParseFromString(
      ::coalesce::testing::BuildMlpModel(24, 48, 10, 7));
  return builder;
}

// Without padding: the first batch on a slot with new shapes runs step by
// step (the warm-up), the second is captured and launched as a graph, later
// ones replay it; each slot's buffers get their own graph; outputs are
// right every time.
TEST_F(GraphProgramTest, GraphsAreCapturedAfterWarmUpAndReplayed) {
  GraphProgramOptions options;
  options.pad_batches = false;
  ASSERT_OK_AND_LOADED(SmallMlp(), {}, ModelOptions::ForDevice(), options);
  for (int run = 0; run < 4; ++run) ExpectMatchesCpu({RandomTensor({8, 24})});
  EXPECT_EQ(device_->graphs_captured(), 1);
  EXPECT_EQ(device_->graph_launches(), 3);
  ExpectMatchesCpu({RandomTensor({8, 24})}, 1e-5f,
                   /*slot_index=*/1);  // new buffers
  EXPECT_EQ(device_->graphs_captured(), 1);
  ExpectMatchesCpu({RandomTensor({8, 24})}, 1e-5f, 1);
  EXPECT_EQ(device_->graphs_captured(), 2);
  EXPECT_EQ(device_->graph_launches(), 4);
}

TEST_F(GraphProgramTest, GraphsOffRunsStepByStep) {
  GraphProgramOptions options;
  options.device_graphs = false;
  ASSERT_OK_AND_LOADED(SmallMlp(), {}, ModelOptions::ForDevice(), options);
  for (int run = 0; run < 3; ++run) ExpectMatchesCpu({RandomTensor({8, 24})});
  EXPECT_EQ(device_->graphs_captured(), 0);
  EXPECT_EQ(device_->graph_launches(), 0);
}

TEST_F(GraphProgramTest, GraphCountIsBounded) {
  GraphProgramOptions options;
  options.max_graphs = 2;
  options.pad_batches = false;
  ASSERT_OK_AND_LOADED(SmallMlp(), {}, ModelOptions::ForDevice(), options);
  for (int run = 0; run < 3; ++run) {
    for (int64_t batch : {1, 2, 3, 4})
      ExpectMatchesCpu({RandomTensor({batch, 24})});
  }
  EXPECT_EQ(device_->graphs_captured(), 2);
  EXPECT_EQ(device_->graph_launches(), 4);  // 2 graphs, replayed on runs 1, 2
}

TEST(GraphBatchSizeTest, PowersOfTwoAndOneAndAHalfTimesThem) {
  std::vector<int64_t> sizes;
  for (int64_t batch = 1; batch <= 25; ++batch)
    sizes.push_back(GraphBatchSize(batch));
  EXPECT_THAT(sizes, ::testing::ElementsAre(1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12,
                                            12, 16, 16, 16, 16, 24, 24, 24, 24,
                                            24, 24, 24, 24, 32));
  EXPECT_EQ(GraphBatchSize(129), 192);
  EXPECT_EQ(GraphBatchSize(256), 256);
}

// A model whose rows are independent runs batches of 5 and 6 rows on the
// graph of 6, on both slots: one capture, replayed from then on. Outputs
// match the CPU engine every time, also when the padding row holds what
// the batch before left there.
TEST_F(GraphProgramTest, PaddedBatchesShareOneGraphPerSize) {
  ASSERT_OK_AND_LOADED(SmallMlp());
  int slot = 0;
  for (int64_t batch : {6, 5, 6, 5, 5}) {
    ExpectMatchesCpu({RandomTensor({batch, 24})}, 1e-5f, slot);
    slot = 1 - slot;
  }
  EXPECT_EQ(device_->graphs_captured(), 1);
  EXPECT_EQ(device_->graph_launches(), 4);
}

// What the server's warm-up runs (server/model_warmup.h): one batch size
// per graph bucket up to max_batch_size, the last max_batch_size itself.
// After each ran twice, a batch of any size up to the maximum replays a
// captured graph: no binding or capture is left for requests.
TEST_F(GraphProgramTest, PreparedBatchSizesCoverEveryBucket) {
  ASSERT_OK_AND_LOADED(SmallMlp());
  EXPECT_THAT(executor_->PreparedBatchSizes(10),
              ::testing::ElementsAre(1, 2, 3, 4, 6, 8, 10));
  EXPECT_THAT(executor_->PreparedBatchSizes(8),
              ::testing::ElementsAre(1, 2, 3, 4, 6, 8));
  for (int64_t batch : executor_->PreparedBatchSizes(10)) {
    for (int run = 0; run < 2; ++run)
      ExpectMatchesCpu({RandomTensor({batch, 24})});
  }
  const int captured = device_->graphs_captured();
  EXPECT_EQ(captured, 7);
  for (int64_t batch : {5, 7, 9, 1, 10})
    ExpectMatchesCpu({RandomTensor({batch, 24})});
  EXPECT_EQ(device_->graphs_captured(), captured);
}

// BatchSlot::ReadyFor: a slot is ready for a batch once its plan is bound,
// its graph captured and its buffers large enough; padded batches share
// their bucket's plan and graph, so a bucket ready makes every size in it
// ready, on every slot whose staging holds it.
TEST_F(GraphProgramTest, SlotIsReadyOnceItsBucketIsBoundAndCaptured) {
  ASSERT_OK_AND_LOADED(SmallMlp());
  BatchSlot* slot = executor_->slot(0);
  ASSERT_TRUE(slot->SetInputShapes({{16, 24}}).ok());  // staging never moves
  EXPECT_FALSE(slot->ReadyFor({{6, 24}}));
  ExpectMatchesCpu({RandomTensor({6, 24})});  // binds; the graph is seen
  EXPECT_FALSE(slot->ReadyFor({{6, 24}}));
  ExpectMatchesCpu({RandomTensor({6, 24})});  // captures
  const int captured = device_->graphs_captured();
  for (int64_t batch : {5, 6}) EXPECT_TRUE(slot->ReadyFor({{batch, 24}}));
  EXPECT_FALSE(slot->ReadyFor({{4, 24}}));  // bucket 4: not bound
  EXPECT_FALSE(slot->ReadyFor({{1, 24}}));  // 1 is not padded: its own graph
  EXPECT_FALSE(executor_->slot(1)->ReadyFor({{5, 24}}));  // staging is empty
  ASSERT_TRUE(executor_->slot(1)->SetInputShapes({{6, 24}}).ok());
  EXPECT_TRUE(executor_->slot(1)->ReadyFor({{5, 24}}));
  ExpectMatchesCpu({RandomTensor({5, 24})}, 1e-5f, /*slot_index=*/1);
  EXPECT_EQ(device_->graphs_captured(), captured);  // nothing new
  EXPECT_FALSE(slot->ReadyFor({{7, 24}}));          // bucket 8
  EXPECT_FALSE(slot->ReadyFor({{6, 25}}));          // a shape the model refuses
  // Bucket 16 grows the arena, which drops every graph: the slot forgets
  // that it was ready for 6.
  ASSERT_TRUE(slot->ReadyFor({{6, 24}}));
  ExpectMatchesCpu({RandomTensor({16, 24})});
  EXPECT_FALSE(slot->ReadyFor({{6, 24}}));
}

// Warm-up's order (server/model_warmup.h): the largest bucket first grows
// the arena once; buckets captured after it stay captured, so every batch
// size is ready. (Smallest first, each larger bucket's arena growth would
// drop the graphs captured before it.)
TEST_F(GraphProgramTest, LargestBucketFirstLeavesEverySizeReady) {
  ASSERT_OK_AND_LOADED(SmallMlp());
  ASSERT_TRUE(executor_->slot(0)->SetInputShapes({{10, 24}}).ok());
  std::vector<int64_t> sizes = executor_->PreparedBatchSizes(10);
  std::reverse(sizes.begin(), sizes.end());
  for (int64_t batch : sizes) {
    for (int run = 0; run < 2; ++run)
      ExpectMatchesCpu({RandomTensor({batch, 24})});
  }
  for (int64_t batch = 1; batch <= 10; ++batch)
    EXPECT_TRUE(executor_->slot(0)->ReadyFor({{batch, 24}})) << batch;
}

TEST_F(GraphProgramTest, WithoutGraphsASlotIsReadyAfterOneBatch) {
  ASSERT_OK_AND_LOADED(SmallMlp(), {}, ModelOptions::ForDevice(),
                       {.device_graphs = false});
  BatchSlot* slot = executor_->slot(0);
  EXPECT_FALSE(slot->ReadyFor({{3, 24}}));
  ExpectMatchesCpu({RandomTensor({3, 24})});
  EXPECT_TRUE(slot->ReadyFor({{3, 24}}));
  EXPECT_FALSE(slot->ReadyFor({{2, 24}}));  // its plan is not bound
}

TEST_F(GraphProgramTest, PaddingOffGivesEachBatchSizeItsGraph) {
  GraphProgramOptions options;
  options.pad_batches = false;
  ASSERT_OK_AND_LOADED(SmallMlp(), {}, ModelOptions::ForDevice(), options);
  for (int run = 0; run < 2; ++run) {
    // Largest first: the slot's buffers grow once, and keep their address.
    for (int64_t batch : {6, 5}) ExpectMatchesCpu({RandomTensor({batch, 24})});
  }
  EXPECT_EQ(device_->graphs_captured(), 2);
  EXPECT_THAT(executor_->PreparedBatchSizes(10), ::testing::IsEmpty());
}

// Softmax over the whole batch (opset 11, axis 0) mixes rows, so padding
// would change the outputs: its batches run at their own size, and the
// warm-up prepares every size (each binds a plan of its own).
TEST_F(GraphProgramTest, RowsThatMixAreNotPadded) {
  OnnxModelBuilder b(11);
  b.Input("x", {-1, 4});
  SetIntAttr(b.Node("Softmax", {"x"}, {"y"}), "axis", 0);
  b.Output("y", {-1, 4});
  ASSERT_OK_AND_LOADED(b);
  EXPECT_THAT(executor_->PreparedBatchSizes(6),
              ::testing::ElementsAre(1, 2, 3, 4, 5, 6));
  ASSERT_TRUE(executor_->slot(0)->SetInputShapes({{6, 4}}).ok());
  for (int run = 0; run < 2; ++run) {
    for (int64_t batch : {6, 5}) ExpectMatchesCpu({RandomTensor({batch, 4})});
  }
  EXPECT_EQ(device_->graphs_captured(), 2);
  EXPECT_TRUE(executor_->slot(0)->ReadyFor({{5, 4}}));
  EXPECT_FALSE(executor_->slot(0)->ReadyFor({{4, 4}}));  // not prepared here
}

// 1 + 2^-12 is not a float16 (10 mantissa bits): FP16 mode rounds it to 1
// in a weight (converted at binding) and in an activation (converted on the
// device before the product), so x [1 + 2^-12, 1] times w [1, 1 + 2^-12]
// is exactly 2 where float32 gives 2 + 2^-11. A 1x1 convolution likewise.
// x [v, 1] times w [1, v] (MatMul y) and a 1x1 convolution of 1 by v (z).
OnnxModelBuilder RoundingProbe(float v) {
  OnnxModelBuilder b;
  b.Input("x", {-1, 2});
  b.Input("image", {-1, 1, 1, 1});
  b.FloatInitializer("w", {2, 1}, {1.0f, v});
  b.FloatInitializer("k", {1, 1, 1, 1}, {v});
  b.Node("MatMul", {"x", "w"}, {"y"});
  b.Node("Conv", {"image", "k"}, {"z"});
  b.Output("y", {-1, 1});
  b.Output("z", {-1, 1, 1, 1});
  return b;
}

TEST_F(GraphProgramTest, Fp16RoundsTheOperandsOfProducts) {
  const float odd = 1.0f + 1.0f / 4096;
  for (bool fp16 : {false, true}) {
    ASSERT_OK_AND_LOADED(
        RoundingProbe(odd), {}, ModelOptions::ForDevice(),
        GraphProgramOptions{.activations = fp16 ? DeviceFloat::kHalf
                                                : DeviceFloat::kFloat});
    auto out = ::coalesce::testing::RunBatch(
        *executor_, model_->signature(), 0,
        {::coalesce::testing::MakeTyped(DataType::kFp32, {1, 2},
                                        std::vector<float>{odd, 1.0f}),
         ::coalesce::testing::MakeTyped(DataType::kFp32, {1, 1, 1, 1},
                                        std::vector<float>{1.0f})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].values<float>()[0], fp16 ? 2.0f : 2.0f + 2.0f / 4096)
        << "fp16 " << fp16;
    EXPECT_EQ((*out)[1].values<float>()[0], fp16 ? 1.0f : odd)
        << "fp16 " << fp16;
    executor_.reset();
  }
}

// 1 + 2^-9 is a float16 but not a bfloat16 (7 mantissa bits): BF16 mode
// rounds it to 1 in the weights and activations of products, FP16 mode
// keeps it, so the two modes really store different types.
TEST_F(GraphProgramTest, Bf16RoundsTheOperandsOfProductsToSevenBits) {
  const float fine = 1.0f + 1.0f / 512;
  for (DeviceFloat mode : {DeviceFloat::kHalf, DeviceFloat::kBFloat16}) {
    const bool bf16 = mode == DeviceFloat::kBFloat16;
    ASSERT_OK_AND_LOADED(RoundingProbe(fine), {}, ModelOptions::ForDevice(),
                         GraphProgramOptions{.activations = mode});
    auto out = ::coalesce::testing::RunBatch(
        *executor_, model_->signature(), 0,
        {::coalesce::testing::MakeTyped(DataType::kFp32, {1, 2},
                                        std::vector<float>{fine, 1.0f}),
         ::coalesce::testing::MakeTyped(DataType::kFp32, {1, 1, 1, 1},
                                        std::vector<float>{1.0f})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].values<float>()[0], bf16 ? 2.0f : 2 * fine)
        << DeviceFloatName(mode);
    EXPECT_EQ((*out)[1].values<float>()[0], bf16 ? 1.0f : fine)
        << DeviceFloatName(mode);
    executor_.reset();
  }
}

// Growing the arena (a larger batch) drops the graphs, whose addresses are
// stale; they are captured again.
TEST_F(GraphProgramTest, ArenaGrowthDropsGraphs) {
  ASSERT_OK_AND_LOADED(SmallMlp());
  for (int run = 0; run < 2; ++run) ExpectMatchesCpu({RandomTensor({1, 24})});
  EXPECT_EQ(device_->graphs_captured(), 1);
  ExpectMatchesCpu({RandomTensor({512, 24})});  // a bigger arena
  for (int run = 0; run < 3; ++run) ExpectMatchesCpu({RandomTensor({1, 24})});
  EXPECT_EQ(device_->graphs_captured(), 2);  // batch 1 captured again
}

TEST_F(GraphProgramTest, OperatorsMatchCpuWithOptimizerOn) {
  ASSERT_OK_AND_LOADED(OperatorModel());
  for (int64_t batch : {1, 3}) {
    ExpectMatchesCpu(
        {RandomTensor({batch, 4, 6}), RandomTensor({batch, 6, 4})});
  }
}

TEST_F(GraphProgramTest, OperatorsMatchCpuWithOptimizerOff) {
  ModelOptions options;
  options.optimizer = OptimizerOptions::None();
  ASSERT_OK_AND_LOADED(OperatorModel(), {}, options);
  ExpectMatchesCpu({RandomTensor({2, 4, 6}), RandomTensor({2, 6, 4})});
}

TEST_F(GraphProgramTest, GemmWithFullCAndTransposes) {
  OnnxModelBuilder b(17);
  b.Input("a", {7, -1});  // transA: [K, M]
  b.FloatInitializer("w", {3, 7}, ::coalesce::testing::RandomFloats(21, 8));
  b.Input("c", {-1, 3});
  auto& gemm = b.Node("Gemm", {"a", "w", "c"}, {"y"});
  SetIntAttr(gemm, "transA", 1);
  SetIntAttr(gemm, "transB", 1);
  SetFloatAttr(gemm, "alpha", -1.5f);
  b.Node("Tanh", {"y"}, {"z"});
  b.Output("z");
  ASSERT_OK_AND_LOADED(b);
  ExpectMatchesCpu({RandomTensor({7, 5}), RandomTensor({5, 3})});
}

TEST_F(GraphProgramTest, MatMulWithOneMatrixOnTheLeftBroadcasts) {
  OnnxModelBuilder b(17);
  b.FloatInitializer("a", {3, 4}, ::coalesce::testing::RandomFloats(12, 9));
  b.Input("x", {-1, 4, 2});
  b.Node("MatMul", {"a", "x"}, {"y"});
  b.Output("y");
  ASSERT_OK_AND_LOADED(b);
  ExpectMatchesCpu({RandomTensor({3, 4, 2})});
}

TEST_F(GraphProgramTest, RefusesAtLoadNamingEveryNodeItCannotRun) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8});
  b.Node("Round", {"x"}, {"e"}, "the_round");
  b.Node("Relu", {"e"}, {"r"});
  b.Node("Softplus", {"r"}, {"a"}, "the_softplus");
  b.Output("a");
  absl::Status s = Load(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("node 'the_round' (op 'Round')"),
                    HasSubstr("node 'the_softplus' (op 'Softplus')"),
                    ::testing::Not(HasSubstr("Relu"))));
}

TEST_F(GraphProgramTest, RefusesAtLoadWhatOnlyShapesShow) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8}, onnx::TensorProto::DOUBLE);
  b.Node("Add", {"x", "x"}, {"y"}, "double_add");
  b.Input("f", {-1, 2, 3});
  SetIntAttr(b.Node("Softmax", {"f"}, {"sm"}, "middle_softmax"), "axis", 1);
  b.Output("y", {}, onnx::TensorProto::DOUBLE);
  b.Output("sm");
  absl::Status s = Load(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(
      s.message(),
      AllOf(HasSubstr("node 'double_add' (op 'Add')"), HasSubstr("FP64"),
            HasSubstr("node 'middle_softmax' (op 'Softmax')")));
}

TEST_F(GraphProgramTest, ShapeArithmeticFoldsAndNeedsNoKernel) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters emit:
  // computed while planning, so the device never sees Shape or Gather.
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 2, 3});
  b.Int64Initializer("zero", {}, {0});
  b.Int64Initializer("axes", {1}, {0});
  b.Int64Initializer("six", {1}, {6});
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Gather", {"shape", "zero"}, {"n"});
  b.Node("Unsqueeze", {"n", "axes"}, {"n1"});
  SetIntAttr(b.Node("Concat", {"n1", "six"}, {"target"}), "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"flat"});
  b.Node("Relu", {"flat"}, {"y"});
  b.Output("y");
  ASSERT_OK_AND_LOADED(b);
  ExpectMatchesCpu({RandomTensor({4, 2, 3})});
}

TEST_F(GraphProgramTest, RefusesAtLoadWhatOnlyLargeBatchesRun) {
  // ConstantOfShape(Shape(x)): 4 KB at batch 1, folded while planning; at
  // batch 64 and up past the planner's 64 KB, so it would run, and the
  // device has no kernel for it. (An Expand in the same place runs:
  // device_test_cases.cc's expand_int64_unfolded.)
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 1024});
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("ConstantOfShape", {"shape"}, {"zeros"}, "zeros_like_x");
  b.Node("Add", {"x", "zeros"}, {"y"});
  b.Output("y");
  absl::Status s = Load(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(),
              HasSubstr("node 'zeros_like_x' (op 'ConstantOfShape')"));
}

TEST_F(GraphProgramTest, OutOfDeviceMemoryForWeightsIsResourceExhausted) {
  OnnxModelBuilder builder;
  builder.proto().ParseFromString(
      ::coalesce::testing::BuildMlpModel(64, 256, 10, 7));
  SimulatedDevice::Options small;
  small.device_memory_bytes = 16 * 1024;  // the weights need ~100 KB
  absl::Status s = Load(builder, small);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

// DeviceConstants shared (the server's instances of one model on one GPU):
// the second program uploads no weight, and both compute right.
TEST(SharedConstantsTest, ProgramsOfOneStoreUploadTheWeightsOnce) {
  auto model =
      Model::LoadFromBytes(SmallMlp().Serialize(), ModelOptions::ForDevice());
  ASSERT_TRUE(model.ok()) << model.status();
  auto device = std::make_shared<SimulatedDevice>();
  auto constants = std::make_shared<DeviceConstants>(device);
  std::vector<std::unique_ptr<PipelinedExecutor>> executors;
  std::vector<size_t> store_bytes, device_bytes;
  for (int i = 0; i < 2; ++i) {
    auto program =
        CreateGraphProgram(device, CreateSimulatedKernels(device.get()),
                           SourceOf(*model), {}, constants);
    ASSERT_TRUE(program.ok()) << program.status();
    auto executor = CreatePipelinedExecutor(device, *std::move(program),
                                            PipelinedExecutorOptions{1});
    ASSERT_TRUE(executor.ok()) << executor.status();
    executors.push_back(*std::move(executor));
    store_bytes.push_back(constants->device_bytes());
    device_bytes.push_back(device->device_bytes_in_use());
  }
  const size_t weights = (24 * 48 + 48 + 48 * 10 + 10) * sizeof(float);
  EXPECT_GE(store_bytes[0], weights);
  EXPECT_EQ(store_bytes[1], store_bytes[0]);
  EXPECT_LT(device_bytes[1] - device_bytes[0], weights);
  const HostTensor x = RandomTensor({3, 24});
  const auto typed =
      ::coalesce::testing::MakeTyped(DataType::kFp32, x.shape, x.data);
  auto cpu = ::coalesce::testing::RunModelTyped(*model, {typed});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (auto& executor : executors) {
    auto out = ::coalesce::testing::RunBatch(*executor, (*model)->signature(),
                                             0, {typed});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(::coalesce::testing::CompareOutputs(*out, *cpu, 1e-5f), "");
  }
  executors.clear();
  EXPECT_THAT(device->problems(), ::testing::IsEmpty());
}

TEST(SharedConstantsTest, AnotherDevicesStoreIsRefused) {
  auto model =
      Model::LoadFromBytes(SmallMlp().Serialize(), ModelOptions::ForDevice());
  ASSERT_TRUE(model.ok()) << model.status();
  auto device = std::make_shared<SimulatedDevice>();
  auto other = std::make_shared<SimulatedDevice>();
  auto program = CreateGraphProgram(
      device, CreateSimulatedKernels(device.get()), SourceOf(*model), {},
      std::make_shared<DeviceConstants>(other));
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
