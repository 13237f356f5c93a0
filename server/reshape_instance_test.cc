#include "server/reshape_instance.h"

#include <memory>
#include <string>
#include <vector>

#include "batching/fake_executor.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(ReshapeCompatibleTest, ElementCountsAndWildcards) {
  EXPECT_TRUE(
      ReshapeCompatible("input", "x", {3, 224, 224}, {1, 3, 224, 224}).ok());
  EXPECT_TRUE(ReshapeCompatible("input", "x", {1}, {}).ok());  // to a scalar
  EXPECT_TRUE(ReshapeCompatible("input", "x", {-1, 4}, {2, 2, -1}).ok());
  const absl::Status bad = ReshapeCompatible("output", "y", {1000}, {1, 999});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("output 'y': reshape [1,999]"),
            std::string::npos)
      << bad.message();
  EXPECT_FALSE(ReshapeCompatible("input", "x", {-1, 4}, {8}).ok());
  EXPECT_FALSE(ReshapeCompatible("input", "x", {-1, -1}, {-1, -1}).ok());
}

TEST(MapShapeTest, KeepsTheBatchDimension) {
  EXPECT_EQ(MapShape({3, 224, 224}, {1, 3, 224, 224}, false),
            (Shape{1, 3, 224, 224}));
  EXPECT_EQ(MapShape({5, 1}, {}, true), (Shape{5}));
  EXPECT_EQ(MapShape({2, 12}, {3, -1}, true), (Shape{2, 3, 4}));
  EXPECT_EQ(MapShape({2, 12}, {5}, true), (Shape{2, 12}));  // does not fit
}

class ReshapeInstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeExecutorInstance::Options options;
    options.inputs = {{"x", DataType::kFp32, {-1, -1}}};
    options.auto_complete = true;
    auto fake = std::make_unique<FakeExecutorInstance>(options);
    fake_ = fake.get();
    ReshapePlan plan;
    plan.batching = true;
    plan.inputs = {TensorReshape{{4}, {2, 2}}};
    plan.outputs = {TensorReshape{{4}, {2, 2}}};
    instance_ = WithReshape(std::move(fake), plan);
  }

  FakeExecutorInstance* fake_ = nullptr;
  std::unique_ptr<ExecutorInstance> instance_;
};

TEST_F(ReshapeInstanceTest, TheModelSeesTheReshapeAndClientsTheDims) {
  BatchSlot* slot = instance_->slot(0);
  ASSERT_TRUE(slot->SetInputShapes({{3, 4}}).ok());
  ASSERT_EQ(slot->input_byte_size(0), 3 * 4 * sizeof(float));
  std::fill_n(reinterpret_cast<float*>(slot->input_data(0)), 12, 1.5f);
  instance_->CopyIn(slot);
  instance_->Run(slot);
  absl::Status done = absl::UnknownError("not completed");
  instance_->CopyOut(slot)->OnComplete(
      [&](const absl::Status& s) { done = s; });
  ASSERT_TRUE(done.ok()) << done;
  EXPECT_EQ(fake_->batches().at(0).input_shapes[0], (Shape{3, 2, 2}));
  // The fake echoes input 0 as output 0, shaped as the model's [3, 2, 2].
  EXPECT_EQ(slot->output_shape(0), (Shape{3, 4}));
  EXPECT_EQ(slot->output_byte_size(0), 3 * 4 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<const float*>(slot->output_data(0))[11], 1.5f);
}

TEST_F(ReshapeInstanceTest, SubmitGoesToTheInnerInstance) {
  BatchSlot* slot = instance_->slot(0);
  ASSERT_TRUE(slot->SetInputShapes({{2, 4}}).ok());
  std::fill_n(reinterpret_cast<float*>(slot->input_data(0)), 8, 2.5f);
  absl::Status done = absl::UnknownError("not completed");
  instance_->Submit(slot)->OnComplete([&](const absl::Status& s) { done = s; });
  ASSERT_TRUE(done.ok()) << done;
  EXPECT_EQ(fake_->batches().at(0).input_shapes[0], (Shape{2, 2, 2}));
  EXPECT_EQ(slot->output_shape(0), (Shape{2, 4}));
  EXPECT_EQ(reinterpret_cast<const float*>(slot->output_data(0))[7], 2.5f);
}

TEST(ReshapeSlotTest, ReadyForAsksAboutTheModelsShapes) {
  FakeExecutorInstance::Options options;
  options.inputs = {{"x", DataType::kFp32, {-1, -1, -1}}};
  options.setup_batches = 1;
  auto fake = std::make_unique<FakeExecutorInstance>(options);
  BatchSlot* inner = fake->slot(0);
  ReshapePlan plan;
  plan.batching = true;
  plan.inputs = {TensorReshape{{4}, {2, 2}}};
  auto instance = WithReshape(std::move(fake), plan);
  ASSERT_TRUE(inner->SetInputShapes({{3, 2, 2}}).ok());  // sized once
  EXPECT_TRUE(instance->slot(0)->ReadyFor({{3, 4}}));
  EXPECT_FALSE(instance->slot(0)->ReadyFor({{5, 4}}));
}

TEST(WithReshapeTest, AnEmptyPlanWrapsNothing) {
  auto fake =
      std::make_unique<FakeExecutorInstance>(FakeExecutorInstance::Options{});
  ExecutorInstance* raw = fake.get();
  ReshapePlan plan;
  plan.inputs = {std::nullopt};
  EXPECT_EQ(WithReshape(std::move(fake), plan).get(), raw);
}

}  // namespace
}  // namespace coalesce
