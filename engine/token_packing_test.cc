// Token packing (token_packing.h): real exports of the corpus
// (tests/models/real/) run through the CPU executor packed and padded on a
// batch of mixed lengths, and must agree at every real position, with the
// packed run's padded positions zero (so a packed run that did not happen
// fails); a small encoder built here, which qualifies with its mask and is
// refused without it; and the models that must be refused, with why.
#include "engine/token_packing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/cpu_executor.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/packing_indices.h"
#include "engine/tensor_file.h"
#include "engine/testing/onnx_model_builder.h"
#include "engine/testing/packed_batches.h"
#include "engine/token_packed_plans.h"
#include "gtest/gtest.h"
#include "kernels/cpu/threading.h"

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

// One batch through a CPU executor instance of `model`.
std::vector<testing::FloatOutput> RunOnCpu(
    std::shared_ptr<const Model> model, const std::vector<HostTensor>& inputs) {
  auto outputs = testing::RunOnCpu(std::move(model), inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs)
                      : std::vector<testing::FloatOutput>();
}

std::shared_ptr<const Model> LoadCorpus(const std::string& name, bool packing) {
  ModelOptions options;
  options.token_packing = packing;
  auto model = Model::LoadFromFile(
      absl::StrCat(COALESCE_CORPUS_DIR, "/", name, "/model.onnx"), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

// The packed plan a CPU executor runs for `inputs` of packed `model`
// (null when the batch has no padding).
std::shared_ptr<const ExecutionPlan> PackedPlanFor(
    const std::shared_ptr<const Model>& model,
    const std::vector<HostTensor>& inputs) {
  std::unique_ptr<TokenPackedPlans> plans = TokenPackedPlans::For(model);
  EXPECT_NE(plans, nullptr);
  if (plans == nullptr) return nullptr;
  std::vector<Shape> shapes;
  for (const HostTensor& t : inputs) shapes.push_back(t.shape);
  auto padded = ExecutionPlan::Build(model, shapes);
  EXPECT_TRUE(padded.ok()) << padded.status();
  if (!padded.ok()) return nullptr;
  PackingIndices indices;
  auto plan = plans->PlanFor(shapes, inputs[plans->mask_input()].bytes.data(),
                             **padded, &indices);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : nullptr;
}

TEST(TokenPackingTest, RealExportsMatchPaddedAtRealPositions) {
  const char* const kModels[] = {
      "bert_tiny__torchscript",       "bert_tiny__dynamo",
      "gpt2_tiny__torchscript",       "gpt2_tiny__dynamo",
      "distilbert_tiny__torchscript", "distilbert_tiny__dynamo",
      "roberta_tiny__torchscript",    "roberta_tiny__dynamo",
      "albert_tiny__torchscript",     "albert_tiny__dynamo",
      "clip_text_tiny__torchscript",  "clip_text_tiny__dynamo",
      "t5_encoder_tiny__torchscript",
  };
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Model> packed = LoadCorpus(name, true);
    std::shared_ptr<const Model> padded = LoadCorpus(name, false);
    ASSERT_NE(packed, nullptr);
    ASSERT_NE(padded, nullptr);
    ASSERT_NE(packed->packed(), nullptr) << packed->packing_refusal();
    EXPECT_EQ(padded->packed(), nullptr);
    const TokenPacking& p = packed->packing();
    EXPECT_EQ(packed->signature().inputs[p.mask_input].name, "attention_mask");
    EXPECT_TRUE(p.pads_with_zero_rows);  // a device pads with zero rows
    // At least the dense layers of both layers, and what enters and leaves.
    EXPECT_GE(p.region_nodes, 8);
    EXPECT_GE(p.packs, 1);
    EXPECT_GE(p.unpacks, 1);
    // Both forms hold one copy of the weights.
    int shared = 0;
    const Graph& g = packed->packed()->graph();
    for (const auto& c : g.constants) {
      for (const auto& d : packed->graph().constants)
        shared += c != nullptr && c == d;
    }
    EXPECT_GT(shared, 10);

    int64_t seq = 0;
    const std::vector<int64_t> lengths = {16, 5, 11, 1};
    auto inputs = testing::MixedLengthInputs(
        absl::StrCat(COALESCE_CORPUS_DIR, "/", name), lengths, &seq);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    ASSERT_EQ(seq, 16);
    // Every attention reads and writes the packed rows, but T5's first
    // (its K is a value of its own, a Reshape's copy, not a view of the
    // unpacked QKV product): that one keeps the unpacked form.
    std::shared_ptr<const ExecutionPlan> plan = PackedPlanFor(packed, *inputs);
    ASSERT_NE(plan, nullptr);
    EXPECT_GE(plan->fused_attentions(), 2);
    const int unpacked = std::string(name) == "t5_encoder_tiny__torchscript";
    EXPECT_EQ(plan->packed_row_attentions(),
              plan->fused_attentions() - unpacked);
    EXPECT_EQ(testing::CompareAtRealPositions(RunOnCpu(padded, *inputs),
                                              RunOnCpu(packed, *inputs),
                                              lengths, seq, 1e-5f),
              "");
  }
}

// A batch without padding runs the padded plan: the same outputs exactly.
TEST(TokenPackingTest, FullBatchRunsPadded) {
  std::shared_ptr<const Model> packed = LoadCorpus("bert_tiny__dynamo", true);
  std::shared_ptr<const Model> padded = LoadCorpus("bert_tiny__dynamo", false);
  ASSERT_NE(packed, nullptr);
  ASSERT_NE(padded, nullptr);
  int64_t seq = 0;
  auto inputs = testing::MixedLengthInputs(
      absl::StrCat(COALESCE_CORPUS_DIR, "/bert_tiny__dynamo"), {16, 16}, &seq);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  const std::vector<testing::FloatOutput> a = RunOnCpu(padded, *inputs);
  const std::vector<testing::FloatOutput> b = RunOnCpu(packed, *inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o) EXPECT_EQ(a[o].values, b[o].values);
}

// The CPU's packed plan for a batch computes its real rows rounded up to
// 16 (kCpuTokenRows), not to an eighth of the padded rows.
TEST(TokenPackingTest, CpuPlansRoundTheRealRowsToSixteen) {
  std::shared_ptr<const Model> model = LoadCorpus("bert_tiny__dynamo", true);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<TokenPackedPlans> plans = TokenPackedPlans::For(model);
  ASSERT_NE(plans, nullptr);
  int64_t seq = 0;
  // 33 real rows of 64: the device's eighths would compute 40.
  const std::vector<int64_t> lengths = {16, 5, 11, 1};
  auto inputs = testing::MixedLengthInputs(
      absl::StrCat(COALESCE_CORPUS_DIR, "/bert_tiny__dynamo"), lengths, &seq);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  std::vector<Shape> shapes;
  for (const HostTensor& t : *inputs) shapes.push_back(t.shape);
  auto padded = ExecutionPlan::Build(model, shapes);
  ASSERT_TRUE(padded.ok()) << padded.status();
  PackingIndices indices;
  auto plan = plans->PlanFor(
      shapes, (*inputs)[plans->mask_input()].bytes.data(), **padded, &indices);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_NE(*plan, nullptr);
  EXPECT_EQ(indices.tokens, 33);
  EXPECT_EQ(indices.pack.size(), 48u);
  EXPECT_EQ((*plan)->input_shape(model->signature().inputs.size()), Shape{48});
}

// One padded request alone (batch 1, the matcher's batch stride 0) reads
// and writes packed rows too.
TEST(TokenPackingTest, OneRowReadsPackedRows) {
  std::shared_ptr<const Model> packed = LoadCorpus("bert_tiny__dynamo", true);
  ASSERT_NE(packed, nullptr);
  int64_t seq = 0;
  auto inputs = testing::MixedLengthInputs(
      absl::StrCat(COALESCE_CORPUS_DIR, "/bert_tiny__dynamo"), {5}, &seq);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  std::shared_ptr<const Model> padded = LoadCorpus("bert_tiny__dynamo", false);
  ASSERT_NE(padded, nullptr);
  std::shared_ptr<const ExecutionPlan> plan = PackedPlanFor(packed, *inputs);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->packed_row_attentions(), 2);
  EXPECT_EQ(testing::CompareAtRealPositions(RunOnCpu(padded, *inputs),
                                            RunOnCpu(packed, *inputs), {5}, seq,
                                            1e-5f),
            "");
}

TEST(TokenPackingTest, ModelsThatDoNotQualifyAreRefusedWithTheReason) {
  const struct {
    const char* model;
    const char* reason;
  } kCases[] = {
      {"vit_tiny__dynamo", "is not [batch, sequence]"},
      {"whisper_encoder_tiny__torchscript", "is not [batch, sequence]"},
      {"t5_encoder_tiny__dynamo", "no attention found"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.model);
    std::shared_ptr<const Model> model = LoadCorpus(c.model, true);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->packed(), nullptr);
    EXPECT_NE(model->packing_refusal().find(c.reason), std::string::npos)
        << model->packing_refusal();
  }
}

// How SmallEncoder's scores are masked.
enum class Mask {
  kNone,      // not at all
  kPadding,   // (1 - m) * -10000, m the attention_mask input (1: real)
  kInverted,  // m * -10000 (1: padding, as PyTorch's key_padding_mask)
  kFromIds,   // (1 - (ids != 0)) * -10000, the ids as the mask
};

// A one-layer encoder: ids and attention_mask [B, S], an embedding [10, 8],
// Q, K and V dense layers, two heads, the scores masked as `mask` says,
// the out-projection, residual and LayerNorm. With `mix_rows`, a second
// output "pooled" [B, 8]: position 0 of y plus the mean of that over the
// batch (rows mixed where a zero row would change them).
std::shared_ptr<const Model> SmallEncoder(Mask mask, bool packing,
                                          bool mix_rows = false) {
  constexpr int64_t kE = 8;
  OnnxModelBuilder b(17);
  b.Input("ids", {-1, -1}, onnx::TensorProto::INT64)
      .Input("attention_mask", {-1, -1}, onnx::TensorProto::INT64)
      .Output("y", {-1, -1, kE});
  b.FloatInitializer("table", {10, kE}, testing::RandomFloats(10 * kE, 1));
  for (const char* w : {"wq", "wk", "wv", "wo"})
    b.FloatInitializer(w, {kE, kE}, testing::RandomFloats(kE * kE, w[1]));
  b.FloatInitializer("gamma", {kE}, std::vector<float>(kE, 1.0f));
  b.FloatInitializer("beta", {kE}, std::vector<float>(kE, 0.0f));
  b.FloatInitializer("half", {}, {0.5f});
  b.FloatInitializer("one", {}, {1.0f});
  b.FloatInitializer("big", {}, {-10000.0f});
  b.Int64Initializer("heads", {4}, {0, 0, 2, 4});
  b.Int64Initializer("merged", {3}, {0, 0, kE});
  b.Int64Initializer("axes", {2}, {1, 2});
  b.Node("Gather", {"table", "ids"}, {"x"});
  for (const char* p : {"q", "k", "v"}) {
    const std::string n(p);
    b.Node("MatMul", {"x", "w" + n}, {n});
    b.Node("Reshape", {n, "heads"}, {n + "4"});
  }
  testing::SetIntsAttr(b.Node("Transpose", {"q4"}, {"qh"}), "perm",
                       {0, 2, 1, 3});
  testing::SetIntsAttr(b.Node("Transpose", {"k4"}, {"kt"}), "perm",
                       {0, 2, 3, 1});
  testing::SetIntsAttr(b.Node("Transpose", {"v4"}, {"vh"}), "perm",
                       {0, 2, 1, 3});
  b.Node("MatMul", {"qh", "kt"}, {"s"});
  b.Node("Mul", {"s", "half"}, {"scaled"});
  std::string scores = "scaled";
  if (mask != Mask::kNone) {
    std::string source = "attention_mask";
    if (mask == Mask::kFromIds) {
      b.Int64Initializer("pad_id", {}, {0});
      b.Node("Equal", {"ids", "pad_id"}, {"is_pad"});
      b.Node("Not", {"is_pad"}, {"from_ids"});
      source = "from_ids";
    }
    testing::SetIntAttr(b.Node("Cast", {source}, {"m"}), "to",
                        onnx::TensorProto::FLOAT);
    b.Node("Unsqueeze", {"m", "axes"}, {"m4"});
    if (mask == Mask::kInverted) {
      b.Node("Mul", {"m4", "big"}, {"additive"});
    } else {
      b.Node("Sub", {"one", "m4"}, {"inverted"});
      b.Node("Mul", {"inverted", "big"}, {"additive"});
    }
    b.Node("Add", {"scaled", "additive"}, {"masked"});
    scores = "masked";
  }
  testing::SetIntAttr(b.Node("Softmax", {scores}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "vh"}, {"o"});
  testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                       {0, 2, 1, 3});
  b.Node("Reshape", {"ot", "merged"}, {"merged_heads"});
  b.Node("MatMul", {"merged_heads", "wo"}, {"projected"});
  b.Node("Add", {"projected", "x"}, {"residual"});
  b.Node("LayerNormalization", {"residual", "gamma", "beta"}, {"y"});
  if (mix_rows) {
    b.Output("pooled", {-1, kE});
    b.Int64Initializer("first", {}, {0});
    testing::SetIntAttr(b.Node("Gather", {"y", "first"}, {"y0"}), "axis", 1);
    testing::SetIntsAttr(b.Node("ReduceMean", {"y0"}, {"batch_mean"}), "axes",
                         {0});
    b.Node("Add", {"y0", "batch_mean"}, {"pooled"});
  }
  ModelOptions options;
  options.token_packing = packing;
  auto model = Model::LoadFromBytes(b.Serialize(), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

// SmallEncoder packed and padded on a [batch, seq] batch whose real
// positions are `real`: equal there, the packed run zero elsewhere.
void ExpectSmallEncoderPacks(const std::vector<uint8_t>& real, int64_t batch,
                             int64_t seq) {
  std::shared_ptr<const Model> packed = SmallEncoder(Mask::kPadding, true);
  std::shared_ptr<const Model> padded = SmallEncoder(Mask::kPadding, false);
  ASSERT_NE(packed, nullptr);
  ASSERT_NE(packed->packed(), nullptr) << packed->packing_refusal();
  // The Q, K and V products (one, fused), the out-projection with its
  // residual, the LayerNorm.
  EXPECT_GE(packed->packing().region_nodes, 3);
  std::vector<int64_t> ids, mask;
  for (size_t i = 0; i < real.size(); ++i) {
    ids.push_back((i * 3 + 1) % 10);
    mask.push_back(real[i]);
  }
  auto tensor = [&](const char* name, const std::vector<int64_t>& v) {
    HostTensor t{name, DataType::kInt64, {batch, seq}, ""};
    t.bytes.assign(reinterpret_cast<const char*>(v.data()),
                   v.size() * sizeof(int64_t));
    return t;
  };
  const std::vector<HostTensor> inputs = {tensor("ids", ids),
                                          tensor("attention_mask", mask)};
  std::shared_ptr<const ExecutionPlan> plan = PackedPlanFor(packed, inputs);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->packed_row_attentions(), 1);
  EXPECT_EQ(testing::CompareAtRealPositions(RunOnCpu(padded, inputs),
                                            RunOnCpu(packed, inputs), real,
                                            batch, seq, 1e-5f),
            "");
}

TEST(TokenPackingTest, SmallEncoderPacksRightPaddedRows) {
  ExpectSmallEncoderPacks({1, 1, 1, 1, 1, 1, 1,  //
                           1, 1, 0, 0, 0, 0, 0,  //
                           1, 1, 1, 1, 0, 0, 0},
                          3, 7);
}

// Left padding and a hole: the indices follow the mask, not lengths.
TEST(TokenPackingTest, SmallEncoderPacksLeftPaddedRowsAndHoles) {
  ExpectSmallEncoderPacks({0, 0, 0, 1, 1, 1,  //
                           1, 1, 0, 0, 1, 1,  //
                           0, 0, 0, 0, 0, 1},
                          3, 6);
}

// A mask that means padding where it is 1 qualifies by its shape and fails
// the load-time check; a mask computed from the ids is refused by name.
TEST(TokenPackingTest, MasksOfAnotherMeaningAreRefused) {
  std::shared_ptr<const Model> inverted = SmallEncoder(Mask::kInverted, true);
  ASSERT_NE(inverted, nullptr);
  EXPECT_EQ(inverted->packed(), nullptr);
  EXPECT_NE(inverted->packing_refusal().find(
                "differs from the padded model's at real positions"),
            std::string::npos)
      << inverted->packing_refusal();
  std::shared_ptr<const Model> from_ids = SmallEncoder(Mask::kFromIds, true);
  ASSERT_NE(from_ids, nullptr);
  EXPECT_EQ(from_ids->packed(), nullptr);
  EXPECT_NE(from_ids->packing_refusal().find("also looked up as token ids"),
            std::string::npos)
      << from_ids->packing_refusal();
}

// The load-time check's row of zeros: an encoder whose rows stay apart
// may be padded with zero rows on a device; one that mixes them after its
// attention (a mean over the batch of position 0, which the packing check
// passes: that position is real in every probe row) packs, but may not.
TEST(TokenPackingTest, ZeroRowsPadOnlyModelsWhoseRowsStayApart) {
  std::shared_ptr<const Model> apart = SmallEncoder(Mask::kPadding, true);
  ASSERT_NE(apart, nullptr);
  ASSERT_NE(apart->packed(), nullptr) << apart->packing_refusal();
  EXPECT_TRUE(apart->packing().pads_with_zero_rows);
  std::shared_ptr<const Model> mixed =
      SmallEncoder(Mask::kPadding, true, /*mix_rows=*/true);
  ASSERT_NE(mixed, nullptr);
  ASSERT_NE(mixed->packed(), nullptr) << mixed->packing_refusal();
  EXPECT_FALSE(mixed->packing().pads_with_zero_rows);
}

// Perturbed: without the mask, padded keys would be read.
TEST(TokenPackingTest, AttentionWithoutMaskIsRefused) {
  std::shared_ptr<const Model> model = SmallEncoder(Mask::kNone, true);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->packed(), nullptr);
  EXPECT_NE(model->packing_refusal().find("an attention has no mask"),
            std::string::npos)
      << model->packing_refusal();
}

// A profiled instance profiles the form each batch ran: the packed form's
// nodes for a batch with padding, the model's own for one without.
TEST(TokenPackingTest, ProfilesCountTheFormEachBatchRan) {
  std::shared_ptr<const Model> model = SmallEncoder(Mask::kPadding, true);
  ASSERT_NE(model, nullptr);
  ASSERT_NE(model->packed(), nullptr) << model->packing_refusal();
  NodeProfile profile(model->graph().nodes.size());
  NodeProfile packed_profile(model->packed()->graph().nodes.size());
  auto exec = CreateCpuExecutor(
      model, {.profile = &profile, .packed_profile = &packed_profile});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto batch = [](std::vector<int64_t> mask) {
    std::vector<HostTensor> inputs;
    for (const char* name : {"ids", "attention_mask"}) {
      HostTensor t{name, DataType::kInt64, {2, 3}, ""};
      t.bytes.assign(reinterpret_cast<const char*>(mask.data()),
                     mask.size() * sizeof(int64_t));
      inputs.push_back(std::move(t));
    }
    return inputs;
  };
  ASSERT_TRUE(testing::RunBatch(**exec, batch({1, 1, 0, 1, 0, 0}), 1).ok());
  EXPECT_TRUE(packed_profile.ran());
  EXPECT_FALSE(profile.ran());
  packed_profile.Reset();
  ASSERT_TRUE(testing::RunBatch(**exec, batch({1, 1, 1, 1, 1, 1}), 1).ok());
  EXPECT_FALSE(packed_profile.ran());
  EXPECT_TRUE(profile.ran());

  NodeProfile wrong(model->graph().nodes.size() + 1);
  EXPECT_FALSE(CreateCpuExecutor(model, {.packed_profile = &wrong}).ok());
}

// Threads of this process now.
int ProcessThreads() {
  int n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

// The load-time check runs both forms on the loading thread: with one
// kernel thread, so that OpenMP starts no pool there (a pool that outlives
// the load slows every executor's parallel regions, kernels/cpu/threading.h).
// The small encoder's attention products (4 per MatMul) would run on a
// second thread at a limit of 2.
TEST(TokenPackingTest, TheLoadTimeCheckStartsNoKernelThreads) {
  int before = 0, after = 0, limit_after = 0;
  std::shared_ptr<const Model> model;
  std::thread loader([&] {
    kernels::SetIntraOpThreads(2);
    before = ProcessThreads();
    model = SmallEncoder(Mask::kPadding, true);
    after = ProcessThreads();
    limit_after = kernels::IntraOpThreads();
  });
  loader.join();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(model->packed(), nullptr) << model->packing_refusal();
  EXPECT_LE(after, before);
  EXPECT_EQ(limit_after, 2);
}

}  // namespace
}  // namespace coalesce
