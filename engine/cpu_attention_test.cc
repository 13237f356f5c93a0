// The CPU plan's fused attention (cpu_attention.h) on real exports of the
// corpus (tests/models/real/): every attention the matcher finds is fused,
// and the outputs equal the plan run node by node on a batch of mixed
// lengths, at every position (padded query rows included: the keys the
// fused kernel skips weigh exactly 0 either way).
#include "engine/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/tensor_file.h"
#include "engine/testing/onnx_model_builder.h"
#include "engine/testing/packed_batches.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

// The outputs of `model` on `inputs` fused equal those node by node, at
// every element, within 1e-5 of the largest magnitude (at least 1).
void ExpectFusedMatchesNodeByNode(std::shared_ptr<const Model> model,
                                  const std::vector<HostTensor>& inputs) {
  auto want = testing::RunOnCpu(model, inputs, {.fuse_attention = false});
  auto got = testing::RunOnCpu(model, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < want->size(); ++o) {
    const testing::FloatOutput &w = (*want)[o], &g = (*got)[o];
    ASSERT_EQ(g.shape, w.shape);
    float largest = 1.0f;
    for (float x : w.values) largest = std::max(largest, std::abs(x));
    for (size_t i = 0; i < w.values.size(); ++i) {
      ASSERT_NEAR(g.values[i], w.values[i], 1e-5f * largest)
          << "output " << o << " element " << i;
    }
  }
}

TEST(CpuAttentionTest, RealExportsFuseEveryAttentionAndMatchNodeByNode) {
  const char* const kModels[] = {
      "bert_tiny__torchscript",       "bert_tiny__dynamo",
      "distilbert_tiny__torchscript", "distilbert_tiny__dynamo",
      "roberta_tiny__torchscript",    "albert_tiny__dynamo",
      "clip_text_tiny__torchscript",  "clip_text_tiny__dynamo",
      "gpt2_tiny__torchscript",       "gpt2_tiny__dynamo",
      "t5_encoder_tiny__torchscript",
  };
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
    auto model = Model::LoadFromFile(dir + "/model.onnx");
    ASSERT_TRUE(model.ok()) << model.status();
    int64_t seq = 0;
    const std::vector<int64_t> lengths = {16, 5, 11, 1};
    auto inputs = testing::MixedLengthInputs(dir, lengths, &seq);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    std::vector<Shape> shapes;
    for (const HostTensor& t : *inputs) shapes.push_back(t.shape);
    auto fused = ExecutionPlan::Build(*model, shapes);
    auto unfused =
        ExecutionPlan::Build(*model, shapes, {.fuse_attention = false});
    ASSERT_TRUE(fused.ok()) << fused.status();
    ASSERT_TRUE(unfused.ok()) << unfused.status();
    EXPECT_EQ((*unfused)->fused_attentions(), 0);
    EXPECT_GE((*fused)->fused_attentions(), 2);  // every tiny export has 2
    EXPECT_EQ((*fused)->fused_attentions(),
              static_cast<int>(FindAttention((*fused)->neutral()).size()));

    ExpectFusedMatchesNodeByNode(*model, *inputs);
  }
}

// The corpus' image and audio exports: torchvision's ViT
// (nn.MultiheadAttention: its sites have row views), CLIP's vision model and
// Whisper's encoder fuse every attention, on a batch of two different
// inputs, and match the plan run node by node.
TEST(CpuAttentionTest, VisionAndAudioExportsFuseEveryAttention) {
  const char* const kModels[] = {
      "vit_tiny__torchscript",         "vit_tiny__dynamo",
      "clip_vision_tiny__torchscript", "clip_vision_tiny__dynamo",
      "whisper_encoder_tiny__dynamo",  "whisper_encoder_tiny__torchscript",
  };
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
    auto model = Model::LoadFromFile(dir + "/model.onnx");
    ASSERT_TRUE(model.ok()) << model.status();
    auto input = ReadTensorFile(dir + "/test_data_set_0/input_0.pb");
    ASSERT_TRUE(input.ok()) << input.status();
    ASSERT_EQ(input->dtype, DataType::kFp32);
    // The second entry: the first's values in reverse order.
    std::vector<float> reversed(input->bytes.size() / sizeof(float));
    std::memcpy(reversed.data(), input->bytes.data(), input->bytes.size());
    std::reverse(reversed.begin(), reversed.end());
    input->bytes.append(reinterpret_cast<const char*>(reversed.data()),
                        reversed.size() * sizeof(float));
    input->shape[0] = 2;
    auto fused = ExecutionPlan::Build(*model, {input->shape});
    ASSERT_TRUE(fused.ok()) << fused.status();
    const std::vector<AttentionSite> sites = FindAttention((*fused)->neutral());
    EXPECT_GE((*fused)->fused_attentions(), 2);
    EXPECT_EQ((*fused)->fused_attentions(), static_cast<int>(sites.size()));
    if (std::string(name).starts_with("vit_tiny")) {
      for (const AttentionSite& s : sites) EXPECT_FALSE(s.row_views.empty());
    }
    ExpectFusedMatchesNodeByNode(*model, {*input});
  }
}

// Attention over x [B, S, 8] with two heads, S dynamic: Q, K and V dense
// layers, the head split, scores scaled by 0.5, Softmax, the head merge.
std::shared_ptr<const Model> TwoHeadAttention() {
  constexpr int64_t kE = 8;
  testing::OnnxModelBuilder b(17);
  b.Input("x", {-1, -1, kE}).Output("y", {-1, -1, kE});
  for (const char* w : {"wq", "wk", "wv"})
    b.FloatInitializer(w, {kE, kE}, testing::RandomFloats(kE * kE, w[1]));
  b.FloatInitializer("half", {}, {0.5f});
  b.Int64Initializer("heads", {4}, {0, 0, 2, 4});
  b.Int64Initializer("merged", {3}, {0, 0, kE});
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
  testing::SetIntAttr(b.Node("Softmax", {"scaled"}, {"p"}), "axis", -1);
  b.Node("MatMul", {"p", "vh"}, {"o"});
  testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                       {0, 2, 1, 3});
  b.Node("Reshape", {"ot", "merged"}, {"y"});
  auto model = Model::LoadFromBytes(b.Serialize());
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

// One token per row (the matcher gives rows of extent 1 stride 0), and
// more: the plan fuses the attention and agrees with the nodes.
TEST(CpuAttentionTest, ShortSequencesFuse) {
  std::shared_ptr<const Model> model = TwoHeadAttention();
  ASSERT_NE(model, nullptr);
  for (int64_t seq : {1, 2, 7}) {
    SCOPED_TRACE(seq);
    const std::vector<float> x = testing::RandomFloats(3 * seq * 8, 5);
    HostTensor t{"x", DataType::kFp32, {3, seq, 8}, ""};
    t.bytes.assign(reinterpret_cast<const char*>(x.data()),
                   x.size() * sizeof(float));
    auto fused = ExecutionPlan::Build(model, {t.shape});
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_EQ((*fused)->fused_attentions(), 1);
    auto want = testing::RunOnCpu(model, {t}, {.fuse_attention = false});
    auto got = testing::RunOnCpu(model, {t});
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].values.size(), (*want)[0].values.size());
    for (size_t i = 0; i < (*want)[0].values.size(); ++i)
      ASSERT_NEAR((*got)[0].values[i], (*want)[0].values[i], 1e-5f) << i;
  }
}

// The kernel's scratch is sized for the executor's threads (PlanOptions),
// not the building thread's: plans are built on batch-forming threads.
TEST(CpuAttentionTest, ScratchIsSizedForTheExecutorsThreads) {
  std::shared_ptr<const Model> model = TwoHeadAttention();
  ASSERT_NE(model, nullptr);
  const std::vector<Shape> shapes = {{3, 64, 8}};
  auto one = ExecutionPlan::Build(model, shapes, {.intra_op_threads = 1});
  auto four = ExecutionPlan::Build(model, shapes, {.intra_op_threads = 4});
  ASSERT_TRUE(one.ok() && four.ok());
  // Three more threads' weights (64 x 64) and row sums (64).
  EXPECT_GE((*four)->arena_bytes(),
            (*one)->arena_bytes() + 3 * (64 * 64 + 64) * sizeof(float));
}

}  // namespace
}  // namespace coalesce
