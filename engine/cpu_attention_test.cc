// The CPU plan's fused attention (cpu_attention.h) on real exports of the
// corpus (tests/models/real/): every attention the matcher finds is fused,
// and the outputs equal the plan run node by node on a batch of mixed
// lengths, at every position (padded query rows included: the keys the
// fused kernel skips weigh exactly 0 either way).
#include "engine/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/testing/packed_batches.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

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

    auto want = testing::RunOnCpu(*model, *inputs, {.fuse_attention = false});
    auto got = testing::RunOnCpu(*model, *inputs);
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
}

}  // namespace
}  // namespace coalesce
