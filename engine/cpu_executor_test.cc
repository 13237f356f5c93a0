#include "engine/cpu_executor.h"

#include <cstring>
#include <thread>

#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/denormals.h"

namespace coalesce {
namespace {

constexpr int64_t kIn = 4, kOut = 3;

// y = Relu(x W^T + b) with x [B,4], W [3,4], b [3].
class CpuExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = testing::RandomFloats(kOut * kIn, 1);
    bias_ = testing::RandomFloats(kOut, 2);
    testing::OnnxModelBuilder b;
    b.Input("x", {-1, kIn}).Output("y", {-1, kOut});
    b.FloatInitializer("w", {kOut, kIn}, weights_)
        .FloatInitializer("b", {kOut}, bias_);
    testing::SetIntAttr(b.Node("Gemm", {"x", "w", "b"}, {"h"}), "transB", 1);
    b.Node("Relu", {"h"}, {"y"});
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *model;
  }

  std::vector<float> Reference(const std::vector<float>& x,
                               int64_t batch) const {
    std::vector<float> y(batch * kOut);
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t o = 0; o < kOut; ++o) {
        double acc = bias_[o];
        for (int64_t i = 0; i < kIn; ++i)
          acc += double(x[r * kIn + i]) * weights_[o * kIn + i];
        y[r * kOut + o] = acc > 0 ? static_cast<float>(acc) : 0.0f;
      }
    return y;
  }

  // Runs one batch through the full protocol and checks the result.
  void RunBatch(ExecutorInstance& exec, BatchSlot* slot, int64_t batch,
                uint32_t seed) {
    ASSERT_TRUE(slot->SetInputShapes({{batch, kIn}}).ok());
    ASSERT_EQ(slot->input_byte_size(0), batch * kIn * sizeof(float));
    const auto x = testing::RandomFloats(batch * kIn, seed);
    std::memcpy(slot->input_data(0), x.data(), x.size() * sizeof(float));
    auto in = exec.CopyIn(slot);
    auto run = exec.Run(slot);
    auto out = exec.CopyOut(slot);
    ASSERT_TRUE(out->Wait().ok());
    EXPECT_TRUE(in->IsComplete());
    EXPECT_TRUE(run->IsComplete());
    EXPECT_TRUE(in->Wait().ok());
    EXPECT_TRUE(run->Wait().ok());
    ASSERT_EQ(slot->output_shape(0), (Shape{batch, kOut}));
    ASSERT_EQ(slot->output_byte_size(0), batch * kOut * sizeof(float));
    const auto want = Reference(x, batch);
    const float* y = reinterpret_cast<const float*>(slot->output_data(0));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(y[i], want[i], 1e-5) << i;
    EXPECT_GT(slot->timings().run.count(), 0);
  }

  std::vector<float> weights_, bias_;
  std::shared_ptr<const Model> model_;
};

TEST_F(CpuExecutorTest, RunsSeveralBatchSizes) {
  auto exec =
      CreateCpuExecutor(model_, {.intra_op_threads = 1, .num_slots = 1});
  ASSERT_TRUE(exec.ok()) << exec.status();
  uint32_t seed = 10;
  for (int64_t batch : {1, 3, 8, 3, 1, 64, 8})
    RunBatch(**exec, (*exec)->slot(0), batch, ++seed);
}

TEST_F(CpuExecutorTest, RepeatedShapesReuseBuffers) {
  auto exec = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec.ok());
  BatchSlot* slot = (*exec)->slot(0);
  RunBatch(**exec, slot, 8, 1);
  const char* in_ptr = slot->input_data(0);
  const char* out_ptr = slot->output_data(0);
  for (uint32_t i = 0; i < 5; ++i) {
    RunBatch(**exec, slot, 8, 2 + i);
    EXPECT_EQ(slot->input_data(0), in_ptr);
    EXPECT_EQ(slot->output_data(0), out_ptr);
  }
  RunBatch(**exec, slot, 2, 9);  // smaller batches fit in the same buffers
  EXPECT_EQ(slot->output_data(0), out_ptr);
}

TEST_F(CpuExecutorTest, BadShapeNamesTheInput) {
  auto exec = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec.ok());
  absl::Status s = (*exec)->slot(0)->SetInputShapes({{2, kIn + 1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("'x'"));
  EXPECT_EQ((*exec)->slot(0)->SetInputShapes({}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuExecutorTest, FailedStepFailsLaterSteps) {
  auto exec = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec.ok());
  BatchSlot* slot = (*exec)->slot(0);
  ASSERT_FALSE(slot->SetInputShapes({{2, 7}}).ok());
  auto in = (*exec)->CopyIn(slot);
  auto run = (*exec)->Run(slot);
  auto out = (*exec)->CopyOut(slot);
  EXPECT_EQ(in->Wait().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(run->Wait(), in->Wait());
  EXPECT_EQ(out->Wait(), in->Wait());
  RunBatch(**exec, slot, 2, 3);  // the slot recovers with a good batch
}

TEST_F(CpuExecutorTest, SubmitRunsTheWholeBatchAsOneStep) {
  auto exec = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec.ok());
  BatchSlot* slot = (*exec)->slot(0);
  const int64_t batch = 3;
  ASSERT_TRUE(slot->SetInputShapes({{batch, kIn}}).ok());
  const auto x = testing::RandomFloats(batch * kIn, 11);
  std::memcpy(slot->input_data(0), x.data(), x.size() * sizeof(float));
  ASSERT_TRUE((*exec)->Submit(slot)->Wait().ok());
  ASSERT_EQ(slot->output_shape(0), (Shape{batch, kOut}));
  const auto want = Reference(x, batch);
  const float* y = reinterpret_cast<const float*>(slot->output_data(0));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y[i], want[i], 1e-5);
  EXPECT_GT(slot->timings().run.count(), 0);
}

TEST_F(CpuExecutorTest, SubmitCarriesTheFirstFailure) {
  auto exec = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec.ok());
  BatchSlot* slot = (*exec)->slot(0);
  ASSERT_FALSE(slot->SetInputShapes({{2, 7}}).ok());
  EXPECT_EQ((*exec)->Submit(slot)->Wait().code(),
            absl::StatusCode::kFailedPrecondition);
  RunBatch(**exec, slot, 2, 3);  // the slot recovers with a good batch
}

TEST_F(CpuExecutorTest, TwoSlotsFromTwoThreads) {
  auto exec =
      CreateCpuExecutor(model_, {.intra_op_threads = 2, .num_slots = 2});
  ASSERT_TRUE(exec.ok());
  ASSERT_EQ((*exec)->num_slots(), 2);
  std::thread a([&] {
    for (uint32_t i = 0; i < 20; ++i) RunBatch(**exec, (*exec)->slot(0), 5, i);
  });
  std::thread b([&] {
    for (uint32_t i = 0; i < 20; ++i)
      RunBatch(**exec, (*exec)->slot(1), 7, 100 + i);
  });
  a.join();
  b.join();
}

TEST_F(CpuExecutorTest, ForeignSlotIsRejected) {
  auto exec1 = CreateCpuExecutor(model_, {});
  auto exec2 = CreateCpuExecutor(model_, {});
  ASSERT_TRUE(exec1.ok() && exec2.ok());
  EXPECT_EQ((*exec1)->Run((*exec2)->slot(0))->Wait().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuExecutorTest, InvalidOptions) {
  EXPECT_EQ(CreateCpuExecutor(model_, {.intra_op_threads = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCpuExecutor(model_, {.num_slots = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCpuExecutor(nullptr, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuExecutorTest, ProfileCountsEveryNodeOfEveryRun) {
  NodeProfile profile(model_->graph().nodes.size());
  auto exec = CreateCpuExecutor(model_, {.profile = &profile});
  ASSERT_TRUE(exec.ok()) << exec.status();
  for (uint32_t i = 0; i < 4; ++i) RunBatch(**exec, (*exec)->slot(0), 2, i);
  ASSERT_GE(profile.size(), 1u);  // Gemm and Relu, fused by the optimizer
  for (size_t n = 0; n < profile.size(); ++n) {
    EXPECT_EQ(profile.runs(n), 4);
    EXPECT_GT(profile.nanos(n), 0);
  }
  NodeProfile wrong_size(profile.size() + 1);
  EXPECT_EQ(CreateCpuExecutor(model_, {.profile = &wrong_size}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuExecutorTest, DestructionDrainsQueuedSteps) {
  std::shared_ptr<Event> out;
  {
    auto exec = CreateCpuExecutor(model_, {});
    ASSERT_TRUE(exec.ok());
    BatchSlot* slot = (*exec)->slot(0);
    ASSERT_TRUE(slot->SetInputShapes({{4, kIn}}).ok());
    std::memset(slot->input_data(0), 0, slot->input_byte_size(0));
    (*exec)->CopyIn(slot);
    (*exec)->Run(slot);
    out = (*exec)->CopyOut(slot);
  }
  EXPECT_TRUE(out->IsComplete());
  EXPECT_TRUE(out->Wait().ok());
}

// y = x * 1e-10: for x = 1e-30 every product is denormal (about 1e-40). The
// row is long enough for the kernel to split it across both intra-op threads.
std::vector<float> RunTinyProducts(bool flush_denormals) {
  constexpr int64_t kN = 1 << 17;
  testing::OnnxModelBuilder b;
  b.Input("x", {1, kN}).Output("y", {1, kN});
  b.FloatInitializer("c", {1}, {1e-10f});
  b.Node("Mul", {"x", "c"}, {"y"});
  auto model = b.Load();
  EXPECT_TRUE(model.ok()) << model.status();
  auto exec = CreateCpuExecutor(
      *model, {.intra_op_threads = 2, .flush_denormals = flush_denormals});
  EXPECT_TRUE(exec.ok()) << exec.status();
  BatchSlot* slot = (*exec)->slot(0);
  EXPECT_TRUE(slot->SetInputShapes({{1, kN}}).ok());
  const std::vector<float> x(kN, 1e-30f);
  std::memcpy(slot->input_data(0), x.data(), kN * sizeof(float));
  (*exec)->CopyIn(slot);
  (*exec)->Run(slot);
  EXPECT_TRUE((*exec)->CopyOut(slot)->Wait().ok());
  const float* y = reinterpret_cast<const float*>(slot->output_data(0));
  return std::vector<float>(y, y + kN);
}

TEST(CpuExecutorDenormalsTest, FlushedByDefaultOnEveryIntraOpThread) {
  EXPECT_TRUE(CpuExecutorOptions{}.flush_denormals);
  if (!kernels::FlushDenormalsSupported()) GTEST_SKIP() << "not x86-64";
  for (float v : RunTinyProducts(true)) ASSERT_EQ(v, 0.0f);
}

TEST(CpuExecutorDenormalsTest, KeptWhenFlushingIsOff) {
  for (float v : RunTinyProducts(false)) {
    ASSERT_GT(v, 0.0f);
    ASSERT_LT(v, 1e-38f);
  }
}

}  // namespace
}  // namespace coalesce
