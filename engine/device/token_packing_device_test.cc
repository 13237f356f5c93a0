// Token packing on the simulated device: corpus exports' packed forms run
// through the pipelined executor as a GPU instance would run them
// (DeviceProgramSourceFor: the packed program, its indices derived from
// the staged mask), against the same model padded on the same device, in
// FP32 and FP16, three batches in turn on one instance; and the derived
// inputs' shapes (every token bucket a batch can take).
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/device/device_plan.h"
#include "engine/device/gpu_instance.h"
#include "engine/device/pipelined_executor.h"
#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"
#include "engine/device/token_packing_inputs.h"
#include "engine/model.h"
#include "engine/packing_indices.h"
#include "engine/testing/packed_batches.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;

// Batches of `batches` in turn through a two-slot instance of `model` on a
// simulated device (each on slot 0, after the last); with `packing`, of its
// packed form.
std::vector<std::vector<testing::FloatOutput>> RunOnSimulated(
    const std::shared_ptr<const Model>& model, bool packing,
    DeviceFloat activations,
    const std::vector<std::vector<HostTensor>>& batches) {
  auto device = std::make_shared<SimulatedDevice>();
  GraphProgramSource source = DeviceProgramSourceFor(model, packing);
  EXPECT_EQ(source.derived != nullptr, packing);
  PipelinedExecutorOptions pipeline;
  pipeline.num_slots = 2;
  pipeline.derived = source.derived;
  auto program =
      CreateGraphProgram(device, CreateSimulatedKernels(device.get()),
                         std::move(source), {.activations = activations});
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return {};
  auto exec = CreatePipelinedExecutor(device, *std::move(program), pipeline);
  EXPECT_TRUE(exec.ok()) << exec.status();
  if (!exec.ok()) return {};
  std::vector<std::vector<testing::FloatOutput>> results;
  for (const std::vector<HostTensor>& inputs : batches) {
    auto outputs =
        testing::RunBatch(**exec, inputs, model->signature().outputs.size());
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    results.push_back(outputs.ok() ? *std::move(outputs)
                                   : std::vector<testing::FloatOutput>());
  }
  exec->reset();
  EXPECT_THAT(device->problems(), ::testing::IsEmpty());
  return results;
}

// Corpus exports with a packed form.
constexpr const char* kPackedExports[] = {
    "bert_tiny__dynamo",       "bert_tiny__torchscript",
    "distilbert_tiny__dynamo", "roberta_tiny__torchscript",
    "clip_text_tiny__dynamo",  "gpt2_tiny__torchscript",
    "gpt2_tiny__dynamo",
};

// Corpus export `dir` as a GPU instance in `activations` loads it, with
// its packed form; null (a failure recorded) when it does not load or has
// no packed form.
std::shared_ptr<const Model> LoadPackable(const std::string& dir,
                                          DeviceFloat activations) {
  ModelOptions options = ModelOptions::ForDevice(
      /*channels_last=*/activations != DeviceFloat::kFloat);
  options.token_packing = true;
  auto model = Model::LoadFromFile(dir + "/model.onnx", options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  EXPECT_NE((*model)->packed(), nullptr) << (*model)->packing_refusal();
  return (*model)->packed() != nullptr ? *model : nullptr;
}

std::string Named(const char* name, DeviceFloat activations) {
  return absl::StrCat(name,
                      activations == DeviceFloat::kHalf ? " fp16" : " fp32");
}

TEST(TokenPackingDeviceTest, PackedMatchesPaddedAtRealPositions) {
  for (const char* name : kPackedExports) {
    for (DeviceFloat activations : {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
      SCOPED_TRACE(Named(name, activations));
      const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
      std::shared_ptr<const Model> model = LoadPackable(dir, activations);
      ASSERT_NE(model, nullptr);
      // Three batches on one instance: mixed lengths, other ones (another
      // token bucket, the same staging), and none padded.
      const std::vector<std::vector<int64_t>> lengths = {
          {16, 5, 11, 1}, {3, 16, 2, 9}, {16, 16, 16, 16}};
      std::vector<std::vector<HostTensor>> batches;
      int64_t seq = 0;
      for (const std::vector<int64_t>& l : lengths) {
        auto inputs = testing::MixedLengthInputs(dir, l, &seq);
        ASSERT_TRUE(inputs.ok()) << inputs.status();
        batches.push_back(*std::move(inputs));
      }
      const auto padded = RunOnSimulated(model, false, activations, batches);
      const auto packed = RunOnSimulated(model, true, activations, batches);
      ASSERT_EQ(padded.size(), 3u);
      ASSERT_EQ(packed.size(), 3u);
      // The same rows computed the same way in both: equal, not close. The
      // batch without padding ran its packed plan (T' = B * S) and has no
      // padded position to check.
      for (size_t b = 0; b < 2; ++b) {
        EXPECT_EQ(testing::CompareAtRealPositions(padded[b], packed[b],
                                                  lengths[b], seq, 1e-6f),
                  "")
            << "batch " << b;
      }
      ASSERT_EQ(padded[2].size(), packed[2].size());
      for (size_t o = 0; o < padded[2].size(); ++o)
        EXPECT_EQ(padded[2][o].values, packed[2][o].values);
    }
  }
}

// Holes: the packed rows' positions are not their indices among the
// sequence's rows, and the mask is read at them. (Not left padding: the
// pooler output reads position 0, which is then padded, and the padded
// model pools what it computed there, the packed one zeros. The
// simulated_attention_test.cc case has left padding.)
TEST(TokenPackingDeviceTest, HolesMatchThePaddedModel) {
  constexpr int64_t kBatch = 4, kSeq = 16;
  std::vector<uint8_t> real(kBatch * kSeq, 1);
  real[1] = real[2] = 0;                // row 0: two holes near the start
  real[kSeq + 3] = real[kSeq + 7] = 0;  // row 1: two holes apart
  for (int64_t s = 9; s < kSeq; ++s) real[2 * kSeq + s] = 0;  // row 2: right
  for (const char* name : {"bert_tiny__dynamo", "roberta_tiny__torchscript",
                           "clip_text_tiny__dynamo"}) {
    for (DeviceFloat activations : {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
      SCOPED_TRACE(Named(name, activations));
      const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
      std::shared_ptr<const Model> model = LoadPackable(dir, activations);
      ASSERT_NE(model, nullptr);
      int64_t seq = 0;
      auto inputs = testing::MaskedInputs(dir, real, kBatch, &seq);
      ASSERT_TRUE(inputs.ok()) << inputs.status();
      ASSERT_EQ(seq, kSeq);
      const auto padded = RunOnSimulated(model, false, activations, {*inputs});
      const auto packed = RunOnSimulated(model, true, activations, {*inputs});
      ASSERT_EQ(padded.size(), 1u);
      ASSERT_EQ(packed.size(), 1u);
      EXPECT_EQ(testing::CompareAtRealPositions(padded[0], packed[0], real,
                                                kBatch, kSeq, 1e-6f),
                "");
    }
  }
}

// Every fused attention of the packed plans reads and writes the packed
// rows (plan_lowering.h, engine/packed_rows.h): none runs over padded rows
// between unpacking and packing Gathers, at the largest and the smallest
// token bucket, in FP32 and FP16.
TEST(TokenPackingDeviceTest, EveryAttentionReadsPackedRows) {
  for (const char* name : kPackedExports) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Model> model = LoadPackable(
        absl::StrCat(COALESCE_CORPUS_DIR, "/", name), DeviceFloat::kFloat);
    ASSERT_NE(model, nullptr);
    GraphProgramSource source = DeviceProgramSourceFor(model, true);
    ASSERT_NE(source.derived, nullptr);
    std::vector<Shape> own;
    const size_t count =
        source.signature.inputs.size() - source.derived->count();
    for (size_t i = 0; i < count; ++i) {
      Shape shape = source.signature.inputs[i].dims;
      for (int64_t& d : shape)
        if (d < 0) d = 4;  // the batch; the corpus's sequence is 16
      own.push_back(shape);
    }
    const auto possible = source.derived->PossibleShapes(own);
    ASSERT_GE(possible.size(), 2u);
    for (const auto& derived : {possible.front(), possible.back()}) {
      std::vector<Shape> shapes = own;
      shapes.insert(shapes.end(), derived.begin(), derived.end());
      auto plan = source.planner(shapes);
      ASSERT_TRUE(plan.ok()) << plan.status();
      for (DeviceFloat activations :
           {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
        auto summary = DescribeDevicePlan(**plan, activations);
        ASSERT_TRUE(summary.ok()) << summary.status();
        int packed = 0, padded = 0;
        for (const DevicePlanNode& n : summary->nodes) {
          packed += n.op == "PackedAttention";
          padded += n.op == "Attention";
        }
        EXPECT_GE(packed, 2) << "T' " << derived[0][0];
        EXPECT_EQ(padded, 0) << "T' " << derived[0][0];
      }
    }
  }
}

TEST(TokenPackingDeviceTest, DerivedShapesAreTheTokenBuckets) {
  const TokenPackingInputs derived(/*mask_input=*/1, DataType::kInt64);
  EXPECT_EQ(derived.count(), 3);
  // 2 x 8 = 16 rows: buckets of 2, the largest first.
  const std::vector<std::vector<Shape>> possible =
      derived.PossibleShapes({{2, 8}, {2, 8}});
  ASSERT_EQ(possible.size(), 8u);
  EXPECT_THAT(possible[0], ElementsAre(Shape{16}, Shape{16}, Shape{16}));
  EXPECT_THAT(possible[7], ElementsAre(Shape{2}, Shape{16}, Shape{16}));
  // Every bucket a batch can take is among them, and nothing else.
  for (auto [batch, seq] :
       {std::pair<int64_t, int64_t>{3, 5}, {1, 1}, {4, 100}, {32, 128}}) {
    SCOPED_TRACE(absl::StrCat(batch, " x ", seq));
    std::set<int64_t> buckets, offered;
    for (int64_t tokens = 0; tokens <= batch * seq; ++tokens)
      buckets.insert(TokenBucket(tokens, batch, seq));
    for (const auto& shapes : derived.PossibleShapes({{1}, {batch, seq}}))
      offered.insert(shapes[0][0]);
    EXPECT_EQ(buckets, offered);
    EXPECT_LE(offered.size(), static_cast<size_t>(kTokenBuckets));
  }
  const std::vector<int64_t> mask = {1, 1, 1, 0, 0, 0, 0, 0,
                                     1, 0, 0, 0, 0, 0, 0, 0};
  std::vector<int64_t> pack(16), unpack(16), spread(16);
  auto shapes = derived.Compute({{2, 8}, {2, 8}}, {nullptr, mask.data()},
                                {pack.data(), unpack.data(), spread.data()});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_THAT(*shapes, ElementsAre(Shape{4}, Shape{16}, Shape{16}));
  EXPECT_THAT(std::vector<int64_t>(pack.begin(), pack.begin() + 4),
              ElementsAre(0, 1, 2, 8));
  EXPECT_EQ(unpack[3], 4);  // the zero row
  EXPECT_EQ(spread[3], 0);
}

// A mask read from shared device memory is not on the host: every row is
// taken as real, which is right and packs nothing.
TEST(TokenPackingDeviceTest, MaskOffTheHostPacksEveryRow) {
  const TokenPackingInputs derived(/*mask_input=*/0, DataType::kInt64);
  std::vector<int64_t> pack(6), unpack(6), spread(6);
  auto shapes = derived.Compute({{2, 3}}, {nullptr},
                                {pack.data(), unpack.data(), spread.data()});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_THAT(*shapes, ElementsAre(Shape{6}, Shape{6}, Shape{6}));
  EXPECT_THAT(pack, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(unpack, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(spread, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(derived.Compute({{6}}, {nullptr}, {nullptr, nullptr, nullptr})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
