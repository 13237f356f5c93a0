// DynamicBatcher with a latency target: the batcher plans with the
// LatencyTargetPolicy's decision (not the configured delay), feeds it
// service times and answers, and sheds requests that would end late. The
// policy's arithmetic is tested in latency_target_policy_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "batching/dynamic_batcher.h"
#include "batching/fake_clock.h"
#include "batching/fake_executor.h"
#include "batching/recording_sink.h"

namespace coalesce {
namespace {

using std::chrono::microseconds;
using ::testing::HasSubstr;
using Ms = std::chrono::milliseconds;

class LatencyTargetBatchingTest : public ::testing::Test {
 protected:
  // FP32 "x" [-1] in, "y" [-1] out; max_batch_size 4; a configured delay
  // of 100 ms that the target replaces.
  SchedulerOptions Options(Clock::Duration target) {
    SchedulerOptions options;
    options.model_name = "m";
    options.max_batch_size = 4;
    options.dynamic_batching = true;
    options.max_queue_delay = Ms(100);
    options.latency_target = target;
    options.inputs = {{"x", DataType::kFp32, {-1}}};
    options.outputs = {{"y", DataType::kFp32, {-1}}};
    options.clock = &clock_;
    return options;
  }

  // A batcher with one fake instance; target 20 ms unless said.
  void Start(Clock::Duration target = Ms(20)) {
    const SchedulerOptions options = Options(target);
    FakeExecutorInstance::Options fake;
    fake.inputs = options.inputs;
    auto instance = std::make_unique<FakeExecutorInstance>(fake);
    fake_ = instance.get();
    std::vector<std::unique_ptr<ExecutorInstance>> instances;
    instances.push_back(std::move(instance));
    auto batcher = DynamicBatcher::Create(options, std::move(instances));
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
  }

  void TearDown() override {
    if (fake_ != nullptr) fake_->AutoCompleteFromNow();
    batcher_.reset();
  }

  // Sends a request of `rows` rows of one float.
  std::shared_ptr<SinkRecord> Send(int64_t rows = 1) {
    auto request = std::make_unique<InferenceRequest>();
    data_.push_back(std::string(rows * sizeof(float), '\0'));
    request->inputs.push_back(
        RequestInput{"x", DataType::kFp32, {rows, 1}, data_.back()});
    auto record = std::make_shared<SinkRecord>();
    request->sink = std::make_unique<RecordingSink>(record);
    EXPECT_TRUE(batcher_->Enqueue(&request).ok());
    return record;
  }

  // Completes the oldest batch after it ran for `took`.
  void RunFor(Clock::Duration took) {
    clock_.Advance(took);
    fake_->CompleteNextBatch();
  }

  FakeClock clock_;
  FakeExecutorInstance* fake_ = nullptr;
  std::unique_ptr<DynamicBatcher> batcher_;
  std::vector<std::string> data_;
};

TEST_F(LatencyTargetBatchingTest, WithoutTargetThereIsNoSnapshot) {
  Start(Clock::Duration(0));
  EXPECT_FALSE(batcher_->LatencyTarget().has_value());
}

TEST_F(LatencyTargetBatchingTest, TargetNeedsBatching) {
  SchedulerOptions options = Options(Ms(20));
  options.max_batch_size = 0;
  EXPECT_THAT(ValidateSchedulerOptions(options).message(),
              HasSubstr("latency target needs max_batch_size"));
  options.max_batch_size = 4;
  options.dynamic_batching = false;
  EXPECT_THAT(ValidateSchedulerOptions(options).message(),
              HasSubstr("dynamic batching"));
}

// Nothing measured yet: the configured 100 ms delay is not used, every
// request goes at once.
TEST_F(LatencyTargetBatchingTest, BeforeAnyMeasurementRequestsGoAtOnce) {
  Start();
  auto a = Send();
  fake_->AwaitBatches(1);
  EXPECT_EQ(fake_->batches()[0].input_shapes[0], (Shape{1, 1}));
  RunFor(Ms(1));
  EXPECT_TRUE(a->AwaitFinish().ok());
  const LatencyTargetSnapshot s = *batcher_->LatencyTarget();
  EXPECT_EQ(s.target, Ms(20));
  EXPECT_EQ(s.shed, 0u);
}

// Service times learned from two sizes (5 ms for 1 row, 5.6 ms for 4):
// batching pays, and one row at a time serves less than twice the load
// (6 rows in 21.6 ms), so the batcher waits for company, as long as the
// decision it reports and not the configured 100 ms.
TEST_F(LatencyTargetBatchingTest, WaitsAsTheDecisionSaysOnceBatchingPays) {
  Start();
  auto a = Send(1);
  fake_->AwaitBatches(1);
  RunFor(Ms(5));
  auto b = Send(4);
  fake_->AwaitBatches(2);
  RunFor(microseconds(5600));
  clock_.Advance(Ms(11));  // past the 10 ms a decision is kept
  const Clock::TimePoint sent = clock_.Now();
  auto c = Send(1);
  const LatencyTargetSnapshot s = *batcher_->LatencyTarget();
  ASSERT_GT(s.decision.batch_size, 1);
  ASSERT_GT(s.decision.wait, Clock::Duration(0));
  ASSERT_LT(s.decision.wait, Ms(20));
  clock_.AwaitWaiterWithDeadline(sent + s.decision.wait);
  EXPECT_EQ(fake_->batches().size(), 2u);
  // Nothing arrives meanwhile: the decision stands, and the wait runs out.
  clock_.Advance(s.decision.wait);
  fake_->AwaitBatches(3);
  EXPECT_EQ(fake_->batches()[2].input_shapes[0], (Shape{1, 1}));
  RunFor(Ms(5));
  EXPECT_TRUE(c->AwaitFinish().ok());
}

// A request queued behind a slow batch would end past its 20 ms target:
// answered DEADLINE_EXCEEDED when the slot frees instead of run late; one
// queued for less still runs.
TEST_F(LatencyTargetBatchingTest, ShedsWhatWouldEndAfterTheTarget) {
  Start();
  auto a = Send();
  fake_->AwaitBatches(1);
  RunFor(Ms(5));  // service time of one row: 5 ms
  EXPECT_TRUE(a->AwaitFinish().ok());
  auto c = Send();  // goes at once (the slot is free)
  fake_->AwaitBatches(2);
  auto late = Send();  // waits for the slot
  clock_.Advance(Ms(4));
  auto in_time = Send();  // also waits, 4 ms less
  // c took 12 ms: the median of 5 and 12 is 8.5 ms. Even alone, `late`
  // (queued 12 ms) would end at 20.5 ms; `in_time` (8 ms) at 16.5.
  RunFor(Ms(8));
  EXPECT_TRUE(c->AwaitFinish().ok());
  const absl::Status shed = late->AwaitFinish();
  EXPECT_EQ(shed.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(shed.message(), HasSubstr("latency target"));
  EXPECT_THAT(shed.message(), HasSubstr("model 'm'"));
  fake_->AwaitBatches(3);
  EXPECT_EQ(fake_->batches()[2].input_shapes[0], (Shape{1, 1}));
  RunFor(Ms(1));
  EXPECT_TRUE(in_time->AwaitFinish().ok());
  EXPECT_EQ(batcher_->LatencyTarget()->shed, 1u);
  const ModelStatsSnapshot stats = batcher_->Stats();
  EXPECT_EQ(stats.fail.count, 1u);
  EXPECT_EQ(stats.failures[static_cast<int>(FailureReason::kTimedOut)], 1u);
}

// A request's own deadline counts too, even well inside the target.
TEST_F(LatencyTargetBatchingTest, ShedsWhatWouldEndAfterItsDeadline) {
  Start();
  auto a = Send();
  fake_->AwaitBatches(1);
  RunFor(Ms(5));
  auto b = Send();
  fake_->AwaitBatches(2);
  auto request = std::make_unique<InferenceRequest>();
  data_.push_back(std::string(sizeof(float), '\0'));
  request->inputs.push_back(
      RequestInput{"x", DataType::kFp32, {1, 1}, data_.back()});
  auto record = std::make_shared<SinkRecord>();
  request->sink = std::make_unique<RecordingSink>(record);
  request->deadline = clock_.Now() + Ms(8);
  ASSERT_TRUE(batcher_->Enqueue(&request).ok());
  RunFor(Ms(5));  // frees the slot at +5 ms; 5 ms more would pass +8
  const absl::Status shed = record->AwaitFinish();
  EXPECT_EQ(shed.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(shed.message(), HasSubstr("deadline"));
}

// A model whose batches alone take longer than the target cannot meet it
// at all: requests still run (shedding them all would serve nothing).
TEST_F(LatencyTargetBatchingTest, AnUnreachableTargetShedsNothing) {
  Start(Ms(2));
  auto a = Send();
  fake_->AwaitBatches(1);
  RunFor(Ms(5));
  auto b = Send();
  fake_->AwaitBatches(2);
  auto c = Send();
  RunFor(Ms(5));
  fake_->AwaitBatches(3);
  RunFor(Ms(5));
  EXPECT_TRUE(b->AwaitFinish().ok());
  EXPECT_TRUE(c->AwaitFinish().ok());
  EXPECT_EQ(batcher_->LatencyTarget()->shed, 0u);
}

}  // namespace
}  // namespace coalesce
