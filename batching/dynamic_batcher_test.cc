#include "batching/dynamic_batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batching/fake_clock.h"
#include "batching/fake_executor.h"
#include "batching/recording_sink.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ms = std::chrono::milliseconds;

std::string FloatBytes(float first, int64_t count) {
  std::string bytes(count * sizeof(float), '\0');
  for (int64_t i = 0; i < count; ++i) {
    const float v = first + static_cast<float>(i);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  return bytes;
}

// First float of each row of a recorded input: identifies the requests
// (a request built with `first` f has row heads f, f + cols, ...).
std::vector<float> RowHeads(const std::string& bytes, int cols) {
  std::vector<float> heads;
  for (size_t off = 0; off < bytes.size(); off += cols * sizeof(float)) {
    float v;
    std::memcpy(&v, bytes.data() + off, sizeof(float));
    heads.push_back(v);
  }
  return heads;
}

class DynamicBatcherTest : public ::testing::Test {
 protected:
  // Model: FP32 "x" dims [-1] in, FP32 "y" dims [-1] out; the fake echoes.
  SchedulerOptions Options(int max_batch_size, Clock::Duration delay) {
    SchedulerOptions options;
    options.model_name = "m";
    options.max_batch_size = max_batch_size;
    options.dynamic_batching = true;
    options.max_queue_delay = delay;
    options.inputs = {{"x", DataType::kFp32, {-1}}};
    options.outputs = {{"y", DataType::kFp32, {-1}}};
    options.clock = &clock_;
    return options;
  }

  void Start(const SchedulerOptions& options, int num_instances = 1,
             FakeExecutorInstance::Options fake = {}) {
    fake.inputs = options.inputs;
    std::vector<std::unique_ptr<ExecutorInstance>> instances;
    for (int i = 0; i < num_instances; ++i) {
      auto instance = std::make_unique<FakeExecutorInstance>(fake);
      fakes_.push_back(instance.get());
      instances.push_back(std::move(instance));
    }
    auto batcher = DynamicBatcher::Create(options, std::move(instances));
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
    start_ = clock_.Now();
  }

  void TearDown() override {
    for (FakeExecutorInstance* fake : fakes_) fake->AutoCompleteFromNow();
    batcher_.reset();
  }

  // A request for the default model: `rows` x `cols` floats first, first+1...
  std::unique_ptr<InferenceRequest> Request(float first, int64_t rows,
                                            std::shared_ptr<SinkRecord>* record,
                                            int64_t cols = 2) {
    auto request = std::make_unique<InferenceRequest>();
    data_.push_back(FloatBytes(first, rows * cols));
    request->inputs.push_back(
        RequestInput{"x", DataType::kFp32, {rows, cols}, data_.back()});
    *record = std::make_shared<SinkRecord>();
    request->sink = std::make_unique<RecordingSink>(*record);
    return request;
  }

  std::shared_ptr<SinkRecord> Send(std::unique_ptr<InferenceRequest> request,
                                   std::shared_ptr<SinkRecord> record) {
    EXPECT_TRUE(batcher_->Enqueue(&request).ok());
    return record;
  }

  std::shared_ptr<SinkRecord> Send(float first, int64_t rows = 1,
                                   uint64_t priority = 0, int64_t cols = 2) {
    std::shared_ptr<SinkRecord> record;
    auto request = Request(first, rows, &record, cols);
    request->priority = priority;
    return Send(std::move(request), record);
  }

  // Returns once no batch is in flight. A batch submitted on a setup
  // thread may register its completion callback after the test completed
  // its events; the callback then runs (and frees the slot) on that thread.
  void AwaitNoBatchInFlight() {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (batcher_->InFlightBatches() > 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up);
      std::this_thread::yield();
    }
  }

  // Row heads of batch `index` of the first instance.
  std::vector<float> Heads(int index, int cols = 2) {
    return RowHeads(fakes_[0]->batches().at(index).inputs[0], cols);
  }

  FakeClock clock_;
  Clock::TimePoint start_;
  std::deque<std::string> data_;  // Input bytes; outlive every request.
  std::vector<FakeExecutorInstance*> fakes_;  // Owned by batcher_.
  std::unique_ptr<DynamicBatcher> batcher_;
};

TEST_F(DynamicBatcherTest, FlushesWhenOldestRequestHasWaitedMaxQueueDelay) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(10)));
  auto a = Send(1);
  auto b = Send(10, /*rows=*/2);
  auto c = Send(20);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  clock_.Advance(Ms(9));
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  EXPECT_TRUE(fakes_[0]->batches().empty());
  clock_.Advance(Ms(1));
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(1, 10, 12, 20));
  EXPECT_EQ(fakes_[0]->batches()[0].input_shapes[0], (Shape{4, 2}));
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : {a, b, c}) EXPECT_TRUE(r->AwaitFinish().ok());
  EXPECT_EQ(b->outputs().at(0).shape, (Shape{2, 2}));
  EXPECT_EQ(b->outputs().at(0).data, FloatBytes(10, 4));
}

TEST_F(DynamicBatcherTest, DelayZeroGoesAtOnceWithWhateverIsQueued) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  auto a = Send(1);
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(1));
}

// Threading (dynamic_batcher.h): a small batch that is ready at once is
// formed on the thread that made it possible, any other on the scheduler
// thread.
TEST_F(DynamicBatcherTest, SmallReadyBatchIsFormedOnTheEnqueuingThread) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  // Nothing awaited: the batch was copied in before Enqueue returned.
  const auto batches = fakes_[0]->batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].copied_in_by, std::this_thread::get_id());
  EXPECT_THAT(Heads(0), ElementsAre(1));
}

TEST_F(DynamicBatcherTest, LargeBatchIsGatheredOnTheSchedulerThread) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  // 16400 floats: 65600 bytes, more than the 64 KiB formed inline.
  Send(1, /*rows=*/1, /*priority=*/0, /*cols=*/16400);
  fakes_[0]->AwaitBatches(1);
  EXPECT_NE(fakes_[0]->batches()[0].copied_in_by, std::this_thread::get_id());
}

TEST_F(DynamicBatcherTest, DelayedBatchIsFormedOnTheSchedulerThread) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(10)));
  Send(1);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  EXPECT_TRUE(fakes_[0]->batches().empty());
  clock_.Advance(Ms(10));
  fakes_[0]->AwaitBatches(1);
  EXPECT_NE(fakes_[0]->batches()[0].copied_in_by, std::this_thread::get_id());
}

TEST_F(DynamicBatcherTest, FreedSlotFormsTheNextSmallBatchOnItsThread) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));  // one slot
  auto a = Send(1);
  auto b = Send(2);  // the slot is busy: both wait
  auto c = Send(3);
  ASSERT_EQ(fakes_[0]->batches().size(), 1u);
  fakes_[0]->CompleteNextBatch();  // on this thread: answers a, frees the slot
  const auto batches = fakes_[0]->batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].copied_in_by, std::this_thread::get_id());
  EXPECT_THAT(Heads(1), ElementsAre(2, 3));
  EXPECT_TRUE(a->AwaitFinish().ok());
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : {b, c}) EXPECT_TRUE(r->AwaitFinish().ok());
}

TEST_F(DynamicBatcherTest, SlotFreedInsideExecuteLeavesNextBatchToScheduler) {
  // A batch that completes inside Execute (here: inside CopyOut) frees its
  // slot there; forming the next batch on that thread would nest one call
  // per queued request, so the scheduler thread forms it.
  Start(Options(/*max_batch_size=*/1, /*delay=*/Ms(0)));
  auto first = Send(1);
  std::vector<std::shared_ptr<SinkRecord>> queued;
  for (int i = 2; i <= 5; ++i) queued.push_back(Send(i));
  fakes_[0]->AutoCompleteFromNow();  // completes the first batch here
  for (const auto& r : queued) EXPECT_TRUE(r->AwaitFinish().ok());
  const auto batches = fakes_[0]->batches();
  ASSERT_EQ(batches.size(), 5u);
  EXPECT_EQ(batches[1].copied_in_by, std::this_thread::get_id());
  for (size_t i = 2; i < batches.size(); ++i) {
    EXPECT_NE(batches[i].copied_in_by, std::this_thread::get_id()) << i;
  }
}

// Thread rules (issue 28): a batch whose slot is not ReadyFor its shapes
// (a device's first batches of a shape bind a plan and capture a graph) is
// sized, gathered and submitted on its instance's setup thread, never on
// the enqueuing or completing thread; once the shape is ready, batches form
// inline again.
TEST_F(DynamicBatcherTest, BatchesThatNeedSetupRunOnTheSetupThread) {
  FakeExecutorInstance::Options fake;
  fake.setup_batches = 2;  // bind at the first batch, capture at the second
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)), 1, fake);
  const std::thread::id self = std::this_thread::get_id();
  auto a = Send(1);  // shape {1, 2}: first batch
  fakes_[0]->AwaitBatches(1);
  fakes_[0]->CompleteNextBatch();
  AwaitNoBatchInFlight();
  auto b = Send(2);  // second batch of {1, 2}
  fakes_[0]->AwaitBatches(2);
  fakes_[0]->CompleteNextBatch();
  AwaitNoBatchInFlight();
  auto c = Send(3);  // ready: inline, before Enqueue returns
  ASSERT_EQ(fakes_[0]->batches().size(), 3u);
  auto d = Send(4);  // waits for the slot: with e, a first {2, 2} batch
  auto e = Send(5);
  fakes_[0]->CompleteNextBatch();  // frees the slot on this thread
  fakes_[0]->AwaitBatches(4);
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : {a, b, c, d, e}) EXPECT_TRUE(r->AwaitFinish().ok());

  const auto batches = fakes_[0]->batches();
  ASSERT_EQ(batches.size(), 4u);
  const std::thread::id setup = batches[0].sized_by;
  EXPECT_NE(setup, self);
  for (int i : {0, 1, 3}) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(batches[i].needed_setup);
    EXPECT_EQ(batches[i].sized_by, setup);
    EXPECT_EQ(batches[i].copied_in_by, setup);
  }
  EXPECT_EQ(batches[3].input_shapes[0], (Shape{2, 2}));
  EXPECT_THAT(Heads(3), ElementsAre(4, 5));
  EXPECT_FALSE(batches[2].needed_setup);
  EXPECT_EQ(batches[2].sized_by, self);
  EXPECT_EQ(batches[2].copied_in_by, self);
  EXPECT_THAT(batcher_->SetupBatches(), ElementsAre(3));
}

TEST_F(DynamicBatcherTest, ReadyInstancesNeverStartASetupThread) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)), 2);
  auto a = Send(1);
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(a->AwaitFinish().ok());
  EXPECT_THAT(batcher_->SetupBatches(), ElementsAre(0, 0));
}

TEST_F(DynamicBatcherTest, SchedulerThreadLeavesSetupToTheSetupThread) {
  FakeExecutorInstance::Options fake;
  fake.setup_batches = 1;
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(10)), 1, fake);
  auto a = Send(1);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  clock_.Advance(Ms(10));  // the scheduler forms it: it needs setup
  fakes_[0]->AwaitBatches(1);
  fakes_[0]->CompleteNextBatch();
  AwaitNoBatchInFlight();
  auto b = Send(2);
  clock_.AwaitWaiterWithDeadline(clock_.Now() + Ms(10));
  clock_.Advance(Ms(10));  // the scheduler forms it: ready
  fakes_[0]->AwaitBatches(2);
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : {a, b}) EXPECT_TRUE(r->AwaitFinish().ok());
  const auto batches = fakes_[0]->batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_TRUE(batches[0].needed_setup);
  EXPECT_FALSE(batches[1].needed_setup);
  const std::thread::id scheduler = batches[1].sized_by;
  EXPECT_NE(scheduler, std::this_thread::get_id());
  EXPECT_NE(batches[0].sized_by, scheduler);
  EXPECT_NE(batches[0].sized_by, std::this_thread::get_id());
}

TEST_F(DynamicBatcherTest, FullBatchGoesAtOnce) {
  Start(Options(/*max_batch_size=*/4, /*delay=*/Ms(1000)));
  Send(1, /*rows=*/2);
  Send(10, /*rows=*/2);
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(1, 3, 10, 12));
}

TEST_F(DynamicBatcherTest, PreferredBatchSizeGoesAtOnce) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(1000));
  options.preferred_batch_sizes = {4};
  Start(options);
  Send(1);
  Send(2);
  Send(3);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(1000));
  EXPECT_TRUE(fakes_[0]->batches().empty());
  Send(4);
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(1, 2, 3, 4));
}

TEST_F(DynamicBatcherTest, BatchIsCutAtLargestPreferredSizeReached) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(1000));
  options.preferred_batch_sizes = {2, 3};
  Start(options);
  Send(100, /*rows=*/8);  // Full: occupies the only slot.
  fakes_[0]->AwaitBatches(1);
  for (float v : {1, 2, 3, 4}) Send(v);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(1, 2, 3));
  fakes_[0]->CompleteNextBatch();
  clock_.AwaitWaiterWithDeadline(start_ + Ms(1000));
  EXPECT_EQ(fakes_[0]->batches().size(), 2u);
  clock_.Advance(Ms(1000));
  fakes_[0]->AwaitBatches(3);
  EXPECT_THAT(Heads(2), ElementsAre(4));
}

TEST_F(DynamicBatcherTest, BlockedBatchIsCutAtPreferredSizeBeforeTheDelay) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(1000));
  options.preferred_batch_sizes = {4};
  Start(options);
  Send(100, /*rows=*/8);  // Full: occupies the only slot.
  fakes_[0]->AwaitBatches(1);
  Send(1, /*rows=*/2);
  Send(10, /*rows=*/2);
  Send(20, /*rows=*/2);
  Send(30, /*rows=*/3);  // 2 + 2 + 2 + 3 > 8: blocks the batch at 6.
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(1, 3, 10, 12));
  fakes_[0]->CompleteNextBatch();
  // 2 + 3 rows: neither full nor preferred, so they wait for the delay.
  clock_.AwaitWaiterWithDeadline(start_ + Ms(1000));
  EXPECT_EQ(fakes_[0]->batches().size(), 2u);
  clock_.Advance(Ms(1000));
  fakes_[0]->AwaitBatches(3);
  EXPECT_THAT(Heads(2), ElementsAre(20, 22, 30, 32, 34));
}

TEST_F(DynamicBatcherTest, BlockedBatchSendsAllPendingOnceTheDelayPassed) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(10));
  options.preferred_batch_sizes = {4};
  Start(options);
  Send(100, /*rows=*/8);  // Full: occupies the only slot.
  fakes_[0]->AwaitBatches(1);
  Send(1, /*rows=*/2);
  Send(10, /*rows=*/2);
  Send(20, /*rows=*/2);
  Send(30, /*rows=*/3);
  clock_.Advance(Ms(10));  // The oldest's delay passes while the slot is busy.
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(1, 3, 10, 12, 20, 22));
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(3);
  EXPECT_THAT(Heads(2), ElementsAre(30, 32, 34));
}

TEST_F(DynamicBatcherTest, BatchGrowsWhileTheOnlySlotIsBusy) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(2);
  Send(3);
  Send(4);
  EXPECT_EQ(fakes_[0]->batches().size(), 1u);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(2, 3, 4));
}

TEST_F(DynamicBatcherTest, NeverExceedsMaxBatchSizeAndNeverSplitsARequest) {
  Start(Options(/*max_batch_size=*/4, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(10, /*rows=*/3);
  Send(20, /*rows=*/2);
  Send(30, /*rows=*/1);
  Send(40, /*rows=*/2);
  for (int i = 1; i <= 3; ++i) {
    fakes_[0]->CompleteNextBatch();
    fakes_[0]->AwaitBatches(i + 1);
  }
  EXPECT_THAT(Heads(1), ElementsAre(10, 12, 14));
  EXPECT_THAT(Heads(2), ElementsAre(20, 22, 30));
  EXPECT_THAT(Heads(3), ElementsAre(40, 42));
}

TEST_F(DynamicBatcherTest, DifferentNonBatchShapesAreNotMerged) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  auto a = Send(10, /*rows=*/1, /*priority=*/0, /*cols=*/2);
  auto b = Send(20, /*rows=*/1, /*priority=*/0, /*cols=*/3);
  auto c = Send(30, /*rows=*/1, /*priority=*/0, /*cols=*/2);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(10, 30));
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(3);
  EXPECT_EQ(fakes_[0]->batches()[2].input_shapes[0], (Shape{1, 3}));
  fakes_[0]->CompleteNextBatch();
  EXPECT_EQ(b->AwaitFinish(), absl::OkStatus());
  EXPECT_EQ(b->outputs().at(0).shape, (Shape{1, 3}));
}

TEST_F(DynamicBatcherTest, HigherPriorityLevelsGoFirst) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.priority_levels = 2;
  options.default_priority_level = 2;
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(2, 1, /*priority=*/2);
  Send(3, 1, /*priority=*/1);
  Send(4, 1, /*priority=*/0);  // Default level 2.
  Send(5, 1, /*priority=*/7);  // Out of range: default level 2.
  Send(6, 1, /*priority=*/1);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(3, 6, 2, 4, 5));
}

TEST_F(DynamicBatcherTest, FullLevelQueueRejectsAtOnceWithUnavailable) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.default_queue_policy.max_queue_size = 2;
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(2);
  Send(3);
  std::shared_ptr<SinkRecord> record;
  auto request = Request(4, 1, &record);
  const absl::Status status = batcher_->Enqueue(&request);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  ASSERT_NE(request, nullptr);  // Left to the caller.
  EXPECT_FALSE(record->finished());
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(2, 3));
}

TEST_F(DynamicBatcherTest, RejectTimeoutAnswersUnavailableAndNeverRuns) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.default_queue_policy.default_timeout = Ms(5);
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  auto late = Send(2);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(5));
  clock_.Advance(Ms(4));
  clock_.AwaitWaiterWithDeadline(start_ + Ms(5));
  EXPECT_FALSE(late->finished());
  clock_.Advance(Ms(1));
  const absl::Status status = late->AwaitFinish();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("timed out in queue"));
  fakes_[0]->CompleteNextBatch();
  batcher_->Shutdown();
  EXPECT_EQ(fakes_[0]->batches().size(), 1u);
  EXPECT_EQ(late->finish_calls(), 1);
}

TEST_F(DynamicBatcherTest, DelayTimeoutMovesRequestBehindNonDelayedOnes) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.default_queue_policy.default_timeout = Ms(5);
  options.default_queue_policy.timeout_action =
      QueuePolicy::TimeoutAction::kDelay;
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(2);  // Times out at +5 ms.
  clock_.Advance(Ms(3));
  Send(3);  // Times out at +8 ms.
  clock_.Advance(Ms(2));
  clock_.AwaitWaiterWithDeadline(start_ + Ms(8));  // 2 is delayed now.
  Send(4);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(3, 4, 2));
}

TEST_F(DynamicBatcherTest, RequestTimeoutShortensQueueTimeoutWhenAllowed) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.default_queue_policy.default_timeout = Ms(10);
  options.default_queue_policy.allow_timeout_override = true;
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  std::shared_ptr<SinkRecord> record;
  auto request = Request(2, 1, &record);
  request->timeout = Ms(2);
  Send(std::move(request), record);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(2));
  clock_.Advance(Ms(2));
  EXPECT_EQ(record->AwaitFinish().code(), absl::StatusCode::kUnavailable);
}

TEST_F(DynamicBatcherTest, RequestTimeoutIsIgnoredWhenOverrideIsNotAllowed) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.default_queue_policy.default_timeout = Ms(10);
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  std::shared_ptr<SinkRecord> record;
  auto request = Request(2, 1, &record);
  request->timeout = Ms(2);
  Send(std::move(request), record);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  clock_.Advance(Ms(2));
  clock_.AwaitWaiterWithDeadline(start_ + Ms(10));
  EXPECT_FALSE(record->finished());
  clock_.Advance(Ms(8));
  EXPECT_EQ(record->AwaitFinish().code(), absl::StatusCode::kUnavailable);
}

TEST_F(DynamicBatcherTest, PassedDeadlineAnswersDeadlineExceededAndNeverRuns) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  std::shared_ptr<SinkRecord> record;
  auto request = Request(2, 1, &record);
  request->deadline = start_ + Ms(3);
  Send(std::move(request), record);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(3));
  clock_.Advance(Ms(3));
  EXPECT_EQ(record->AwaitFinish().code(), absl::StatusCode::kDeadlineExceeded);
  fakes_[0]->CompleteNextBatch();
  batcher_->Shutdown();
  EXPECT_EQ(fakes_[0]->batches().size(), 1u);
}

TEST_F(DynamicBatcherTest, DeadlineAlreadyPassedAtEnqueueIsAnsweredPromptly) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(10)));
  std::shared_ptr<SinkRecord> record;
  auto request = Request(2, 1, &record);
  request->deadline = start_;
  Send(std::move(request), record);
  EXPECT_EQ(record->AwaitFinish().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(fakes_[0]->batches().empty());
}

TEST_F(DynamicBatcherTest, CancelledRequestIsAnsweredCancelledAndNeverRuns) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  auto gone = Send(2);
  auto kept = Send(3);
  gone->Cancel();
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(3));
  EXPECT_EQ(gone->AwaitFinish().code(), absl::StatusCode::kCancelled);
}

TEST_F(DynamicBatcherTest, NotifyCancelledAnswersAtOnceAndFreesTheQueuePlace) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(1000));
  options.default_queue_policy.max_queue_size = 1;
  Start(options);
  auto gone = Send(1);
  clock_.AwaitWaiterWithDeadline(start_ + Ms(1000));  // Waiting for delay.
  std::shared_ptr<SinkRecord> record;
  auto request = Request(2, 1, &record);
  EXPECT_EQ(batcher_->Enqueue(&request).code(), absl::StatusCode::kUnavailable);
  gone->Cancel();
  batcher_->NotifyCancelled();
  const absl::Status status = gone->AwaitFinish();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(status.message(), HasSubstr("cancelled while queued"));
  EXPECT_EQ(clock_.Now(), start_);  // Answered before the delay passed.
  EXPECT_EQ(batcher_->Stats().fail.count, 2u);  // Rejection + cancellation.
  EXPECT_EQ(
      batcher_->Stats().failures[static_cast<int>(FailureReason::kRejected)],
      1u);
  EXPECT_EQ(
      batcher_->Stats().failures[static_cast<int>(FailureReason::kCanceled)],
      1u);
  auto kept = Send(std::move(request), record);  // The place is free again.
  clock_.AwaitWaiterWithDeadline(start_ + Ms(1000));
  clock_.Advance(Ms(1000));
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(2));  // The cancelled request never ran.
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(kept->AwaitFinish().ok());
  EXPECT_EQ(gone->finish_calls(), 1);
}

TEST_F(DynamicBatcherTest, NotifyCancelledAnswersWhileEverySlotIsBusy) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  auto running = Send(1);
  fakes_[0]->AwaitBatches(1);
  auto gone = Send(2);
  auto kept = Send(3);
  gone->Cancel();
  running->Cancel();  // Already in a batch: runs to completion.
  batcher_->NotifyCancelled();
  EXPECT_EQ(gone->AwaitFinish().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(running->finished());
  EXPECT_FALSE(kept->finished());
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(running->AwaitFinish().ok());
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(3));
  fakes_[0]->CompleteNextBatch();
  batcher_->Shutdown();
  batcher_->NotifyCancelled();  // After Shutdown: a no-op.
  EXPECT_TRUE(kept->AwaitFinish().ok());
}

TEST_F(DynamicBatcherTest, GathersAndScattersMixedBatchSizes) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(0));
  options.inputs = {{"a", DataType::kFp32, {2}}, {"b", DataType::kInt64, {1}}};
  options.outputs = {{"a_out", DataType::kFp32, {2}},
                     {"b_out", DataType::kInt64, {1}}};
  Start(options);
  std::vector<std::shared_ptr<SinkRecord>> records;
  std::string expected_a, expected_b;
  int64_t next_b = 0;
  auto send = [&](int64_t rows) {
    auto request = std::make_unique<InferenceRequest>();
    data_.push_back(std::string(rows * sizeof(int64_t), '\0'));
    for (int64_t r = 0; r < rows; ++r, ++next_b) {
      std::memcpy(data_.back().data() + r * 8, &next_b, 8);
    }
    expected_b += data_.back();
    // "b" first: the batcher reorders inputs to the model's order.
    request->inputs.push_back({"b", DataType::kInt64, {rows, 1}, data_.back()});
    data_.push_back(FloatBytes(static_cast<float>(rows * 100), rows * 2));
    expected_a += data_.back();
    request->inputs.push_back({"a", DataType::kFp32, {rows, 2}, data_.back()});
    if (rows == 3) request->requested_outputs = {"b_out"};
    records.push_back(std::make_shared<SinkRecord>());
    request->sink = std::make_unique<RecordingSink>(records.back());
    Send(std::move(request), records.back());
  };
  send(1);  // Occupies the slot while the mixed batch queues.
  fakes_[0]->AwaitBatches(1);
  records.clear();
  expected_a.clear();
  expected_b.clear();
  for (int64_t rows : {1, 3, 2}) send(rows);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  const auto batch = fakes_[0]->batches()[1];
  EXPECT_THAT(batch.input_shapes, ElementsAre(Shape{6, 2}, Shape{6, 1}));
  EXPECT_EQ(batch.inputs[0], expected_a);
  EXPECT_EQ(batch.inputs[1], expected_b);
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : records) ASSERT_TRUE(r->AwaitFinish().ok());
  // Request of 2 rows sits at rows 4..5.
  const auto outputs = records[2]->outputs();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].name, "a_out");
  EXPECT_EQ(outputs[0].dtype, DataType::kFp32);
  EXPECT_EQ(outputs[0].shape, (Shape{2, 2}));
  EXPECT_EQ(outputs[0].data, expected_a.substr(4 * 8, 2 * 8));
  EXPECT_EQ(outputs[1].name, "b_out");
  EXPECT_EQ(outputs[1].shape, (Shape{2, 1}));
  EXPECT_EQ(outputs[1].data, expected_b.substr(4 * 8, 2 * 8));
  // Request of 3 rows asked for b_out only: rows 1..3.
  const auto only_b = records[1]->outputs();
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b[0].name, "b_out");
  EXPECT_EQ(only_b[0].shape, (Shape{3, 1}));
  EXPECT_EQ(only_b[0].data, expected_b.substr(1 * 8, 3 * 8));
}

TEST_F(DynamicBatcherTest, ExecutorErrorFailsEveryRequestOfTheBatch) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  Send(1);
  fakes_[0]->AwaitBatches(1);
  auto a = Send(2);
  auto b = Send(3, /*rows=*/2);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  fakes_[0]->CompleteNextBatch(absl::InternalError("device fell over"));
  for (const auto& r : {a, b}) {
    const absl::Status status = r->AwaitFinish();
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_THAT(status.message(), HasSubstr("device fell over"));
    EXPECT_TRUE(r->outputs().empty());
  }
  const ModelStatsSnapshot stats = batcher_->Stats();
  EXPECT_EQ(stats.fail.count, 2u);
  EXPECT_EQ(stats.failures[static_cast<int>(FailureReason::kBackend)], 2u);
  EXPECT_EQ(stats.execution_count, 1u);
  // The slot was released: later requests still run.
  Send(4);
  fakes_[0]->AwaitBatches(3);
}

TEST_F(DynamicBatcherTest, SetInputShapesErrorFailsTheBatch) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)));
  fakes_[0]->FailNextSetInputShapes(absl::ResourceExhaustedError("no mem"));
  auto a = Send(1);
  EXPECT_EQ(a->AwaitFinish().code(), absl::StatusCode::kResourceExhausted);
  Send(2);
  fakes_[0]->AwaitBatches(1);
  EXPECT_THAT(Heads(0), ElementsAre(2));
}

TEST_F(DynamicBatcherTest, ShutdownDrainsQueuedWorkAndRejectsNewRequests) {
  FakeExecutorInstance::Options fake;
  fake.auto_complete = true;
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(1000)), 1, fake);
  auto a = Send(1);
  auto b = Send(2);
  batcher_->Shutdown();
  EXPECT_TRUE(a->finished());
  EXPECT_TRUE(b->finished());
  EXPECT_THAT(Heads(0), ElementsAre(1, 2));
  std::shared_ptr<SinkRecord> record;
  auto request = Request(3, 1, &record);
  EXPECT_EQ(batcher_->Enqueue(&request).code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(request, nullptr);
  batcher_->Shutdown();  // Idempotent.
}

TEST_F(DynamicBatcherTest, ShutdownWaitsForInFlightBatches) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(1000)));
  auto a = Send(1, /*rows=*/8);  // Full: runs at once.
  fakes_[0]->AwaitBatches(1);
  auto b = Send(100);  // Waits for the delay, which never passes.
  std::atomic<bool> returned{false};
  std::thread shutdown([this, &returned] {
    batcher_->Shutdown();
    returned = true;
  });
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(a->AwaitFinish().ok());
  // The clock never moves, so b's batch forms only because Shutdown drains
  // the queue. Once it is copied in the queue is empty and the scheduler
  // exits; the batch stays uncompleted, so Shutdown must still be waiting.
  fakes_[0]->AwaitBatches(2);
  EXPECT_FALSE(returned);
  EXPECT_FALSE(b->finished());
  fakes_[0]->CompleteNextBatch();
  shutdown.join();
  EXPECT_TRUE(returned);
  EXPECT_TRUE(b->finished());
  EXPECT_EQ(b->AwaitFinish(), absl::OkStatus());
}

TEST_F(DynamicBatcherTest, ValidationErrorsNameTheTensorAndLeaveTheRequest) {
  Start(Options(/*max_batch_size=*/4, /*delay=*/Ms(0)));
  std::shared_ptr<SinkRecord> record;
  auto request = Request(1, /*rows=*/5, &record);
  const absl::Status status = batcher_->Enqueue(&request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'x'"));
  ASSERT_NE(request, nullptr);
  request->requested_outputs = {"nope"};
  request->inputs[0].shape = {1, 10};
  EXPECT_THAT(batcher_->Enqueue(&request).message(), HasSubstr("'nope'"));
  EXPECT_EQ(batcher_->Stats().fail.count, 2u);
  EXPECT_EQ(batcher_->Stats().failures[static_cast<int>(FailureReason::kOther)],
            2u);
  EXPECT_FALSE(record->finished());
}

TEST_F(DynamicBatcherTest, StatsCountElementsExecutionsAndBatchSizes) {
  FakeExecutorInstance::Options fake;
  fake.timings.run = Ms(5);
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)), 1, fake);
  auto a = Send(1);
  fakes_[0]->AwaitBatches(1);
  clock_.Advance(Ms(2));
  auto b = Send(2, /*rows=*/2);
  auto c = Send(3);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  fakes_[0]->CompleteNextBatch();
  for (const auto& r : {a, b, c}) ASSERT_TRUE(r->AwaitFinish().ok());
  const ModelStatsSnapshot stats = batcher_->Stats();
  EXPECT_EQ(stats.inference_count, 4u);
  EXPECT_EQ(stats.execution_count, 2u);
  EXPECT_EQ(stats.success.count, 3u);
  EXPECT_EQ(stats.queue.count, 3u);
  EXPECT_EQ(stats.compute_infer.count, 3u);
  EXPECT_EQ(stats.compute_infer.ns, 3u * 5'000'000u);
  EXPECT_EQ(stats.fail.count, 0u);
  ASSERT_EQ(stats.batch_stats.size(), 2u);
  EXPECT_EQ(stats.batch_stats.at(1).compute_infer.count, 1u);
  EXPECT_EQ(stats.batch_stats.at(3).compute_infer.count, 1u);
  EXPECT_EQ(stats.batch_stats.at(3).compute_infer.ns, 5'000'000u);
  EXPECT_GT(stats.last_inference_ms, 0u);
}

TEST_F(DynamicBatcherTest, WithoutBatchDimRequestsNeverMergeAndKeepShapes) {
  SchedulerOptions options = Options(/*max_batch_size=*/0, Ms(0));
  options.inputs = {{"x", DataType::kFp32, {-1, 2}}};
  options.outputs = {{"y", DataType::kFp32, {-1, 2}}};
  Start(options);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  auto b = Send(10);
  auto c = Send(20);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_EQ(fakes_[0]->batches()[1].input_shapes[0], (Shape{1, 2}));
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(3);
  fakes_[0]->CompleteNextBatch();
  ASSERT_TRUE(b->AwaitFinish().ok());
  EXPECT_EQ(b->outputs().at(0).shape, (Shape{1, 2}));
}

TEST_F(DynamicBatcherTest, WithoutDynamicBatchingEachRequestIsItsOwnBatch) {
  SchedulerOptions options = Options(/*max_batch_size=*/8, Ms(1000));
  options.dynamic_batching = false;
  Start(options);
  Send(1, /*rows=*/3);
  fakes_[0]->AwaitBatches(1);
  Send(10);
  Send(20);
  fakes_[0]->CompleteNextBatch();
  fakes_[0]->AwaitBatches(2);
  EXPECT_THAT(Heads(1), ElementsAre(10));
  EXPECT_THAT(Heads(0), ElementsAre(1, 3, 5));
}

TEST_F(DynamicBatcherTest, FeedsEveryInstanceFromOneQueue) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)), /*num_instances=*/2);
  Send(1);
  fakes_[0]->AwaitBatches(1);
  Send(2);
  fakes_[1]->AwaitBatches(1);
  EXPECT_THAT(RowHeads(fakes_[1]->batches()[0].inputs[0], 2), ElementsAre(2));
}

// A sticky fault (health() not OK after a batch) retires the instance: the
// batch's requests fail with the fault, later batches all go to the other
// instance, and the model stays healthy.
TEST_F(DynamicBatcherTest, AnInstanceWithAStickyFaultGetsNoMoreBatches) {
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(0)), /*num_instances=*/2);
  auto a = Send(1);
  fakes_[0]->AwaitBatches(1);
  const absl::Status fault = absl::InternalError("illegal memory access");
  fakes_[0]->SetHealth(fault);
  fakes_[0]->CompleteNextBatch(fault);
  EXPECT_EQ(a->AwaitFinish(), fault);
  auto b = Send(2);
  fakes_[1]->AwaitBatches(1);
  auto c = Send(3);  // waits for instance 1's only slot, not instance 0's
  fakes_[1]->CompleteNextBatch();
  fakes_[1]->AwaitBatches(2);
  fakes_[1]->CompleteNextBatch();
  EXPECT_TRUE(b->AwaitFinish().ok());
  EXPECT_TRUE(c->AwaitFinish().ok());
  EXPECT_EQ(fakes_[0]->batches().size(), 1u);
  EXPECT_THAT(batcher_->InstanceHealth(), ElementsAre(fault, absl::OkStatus()));
  EXPECT_TRUE(batcher_->Health().ok());
}

// With no healthy instance left, the queued requests and every new one fail
// at once with UNAVAILABLE naming the fault; nothing waits for a slot that
// will never come.
TEST_F(DynamicBatcherTest, NoHealthyInstanceFailsTheQueueAndNewRequests) {
  Start(Options(/*max_batch_size=*/1, /*delay=*/Ms(0)));
  auto a = Send(1);
  fakes_[0]->AwaitBatches(1);
  auto b = Send(2);
  auto c = Send(3);
  const absl::Status fault = absl::InternalError("illegal memory access");
  fakes_[0]->SetHealth(fault);
  fakes_[0]->CompleteNextBatch(fault);
  EXPECT_EQ(a->AwaitFinish(), fault);
  for (const auto& queued : {b, c}) {
    const absl::Status s = queued->AwaitFinish();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_THAT(s.message(),
                HasSubstr("model 'm' has no healthy instance: instance 0: "
                          "illegal memory access"));
  }
  std::shared_ptr<SinkRecord> record;
  auto d = Request(4, 1, &record);
  const absl::Status refused = batcher_->Enqueue(&d);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(batcher_->Health(), refused);
  EXPECT_EQ(fakes_[0]->batches().size(), 1u);
}

TEST_F(DynamicBatcherTest, ConcurrentClientsOnTheRealClockAllGetAnswered) {
  SchedulerOptions options =
      Options(/*max_batch_size=*/8, std::chrono::microseconds(100));
  options.clock = RealClock();
  FakeExecutorInstance::Options fake;
  fake.auto_complete = true;
  fake.num_slots = 2;
  Start(options, /*num_instances=*/2, fake);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::vector<std::shared_ptr<SinkRecord>>> records(kThreads);
  std::vector<std::vector<std::unique_ptr<InferenceRequest>>> requests(
      kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      records[t].emplace_back();
      requests[t].push_back(Request(t * 1000 + i, 1 + i % 3, &records[t][i]));
    }
  }
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      for (auto& request : requests[t]) {
        EXPECT_TRUE(batcher_->Enqueue(&request).ok());
      }
    });
  }
  for (std::thread& client : clients) client.join();
  batcher_->Shutdown();
  uint64_t rows = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      EXPECT_TRUE(records[t][i]->AwaitFinish().ok());
      EXPECT_EQ(records[t][i]->finish_calls(), 1);
      EXPECT_EQ(records[t][i]->outputs().at(0).data,
                FloatBytes(t * 1000 + i, (1 + i % 3) * 2));
      rows += 1 + i % 3;
    }
  }
  const ModelStatsSnapshot stats = batcher_->Stats();
  EXPECT_EQ(stats.inference_count, rows);
  EXPECT_EQ(stats.success.count, static_cast<uint64_t>(kThreads * kPerThread));
  uint64_t executions = 0;
  for (const auto& [size, per_size] : stats.batch_stats) {
    EXPECT_LE(size, 8u);
    executions += per_size.compute_infer.count;
  }
  EXPECT_EQ(executions, stats.execution_count);
}

TEST_F(DynamicBatcherTest, InstanceStatesSplitTheInstancesTime) {
  FakeExecutorInstance::Options fake;
  fake.timings = StepTimings{Ms(1), Ms(5), Ms(2)};
  Start(Options(/*max_batch_size=*/8, /*delay=*/Ms(10)), 1, fake);
  clock_.Advance(Ms(4));  // idle, queue empty: 4 ms
  auto a = Send(1);       // idle, batch assembling: 10 ms
  clock_.AwaitWaiterWithDeadline(start_ + Ms(14));
  clock_.Advance(Ms(10));
  fakes_[0]->AwaitBatches(1);
  // Taken at 14, completed at 23: copy in [15,16), run [16,21), copy out
  // [21,23); [14,15) held the slot off the device.
  clock_.Advance(Ms(9));
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(a->AwaitFinish().ok());
  batcher_->Shutdown();   // Waits until the slot is released.
  clock_.Advance(Ms(7));  // idle, queue empty again
  const std::vector<InstanceStateTotals> states = batcher_->InstanceStates();
  ASSERT_EQ(states.size(), 1u);
  using S = InstanceState;
  EXPECT_EQ(states[0][S::kIdleEmptyQueue], Ms(4 + 7));
  EXPECT_EQ(states[0][S::kIdleAssembling], Ms(10));
  EXPECT_EQ(states[0][S::kCopyingIn], Ms(1));
  EXPECT_EQ(states[0][S::kComputing], Ms(5));
  EXPECT_EQ(states[0][S::kCopyingOut], Ms(2));
  EXPECT_EQ(states[0][S::kBlockedPipeline], Ms(1));
  EXPECT_EQ(states[0].Total(), Ms(30));
}

TEST_F(DynamicBatcherTest, EachInstanceHasItsOwnStates) {
  Start(Options(/*max_batch_size=*/1, /*delay=*/Ms(0)), 2);
  auto a = Send(1);
  fakes_[0]->AwaitBatches(1);
  clock_.Advance(Ms(6));
  fakes_[0]->CompleteNextBatch();
  EXPECT_TRUE(a->AwaitFinish().ok());
  batcher_->Shutdown();  // Waits until the slot is released.
  const std::vector<InstanceStateTotals> states = batcher_->InstanceStates();
  ASSERT_EQ(states.size(), 2u);
  using S = InstanceState;
  EXPECT_EQ(states[0][S::kBlockedPipeline], Ms(6));  // zero step timings
  EXPECT_EQ(states[1][S::kIdleEmptyQueue], Ms(6));
  EXPECT_EQ(states[0].Total(), Ms(6));
  EXPECT_EQ(states[1].Total(), Ms(6));
}

TEST(DynamicBatcherCreateTest, RejectsBadOptions) {
  FakeClock clock;
  SchedulerOptions options;
  options.max_batch_size = 4;
  options.preferred_batch_sizes = {8};
  options.inputs = {{"x", DataType::kFp32, {2}}};
  options.outputs = {{"y", DataType::kFp32, {2}}};
  options.clock = &clock;
  std::vector<std::unique_ptr<ExecutorInstance>> instances;
  instances.push_back(
      std::make_unique<FakeExecutorInstance>(FakeExecutorInstance::Options{}));
  EXPECT_EQ(
      DynamicBatcher::Create(options, std::move(instances)).status().code(),
      absl::StatusCode::kInvalidArgument);
  options.preferred_batch_sizes = {};
  EXPECT_EQ(DynamicBatcher::Create(options, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
