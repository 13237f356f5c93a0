#include "batching/sequence_batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
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

std::string Int32Bytes(int32_t v) {
  std::string bytes(sizeof(v), '\0');
  std::memcpy(bytes.data(), &v, sizeof(v));
  return bytes;
}

std::vector<int32_t> Int32s(const std::string& bytes) {
  std::vector<int32_t> values(bytes.size() / sizeof(int32_t));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(int32_t));
  return values;
}

std::vector<uint64_t> Uint64s(const std::string& bytes) {
  std::vector<uint64_t> values(bytes.size() / sizeof(uint64_t));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(uint64_t));
  return values;
}

// Model inputs, in this order.
enum Input { kX, kStart, kEnd, kReady, kCorrId, kStateIn };

// An accumulator, per row: acc = (START ? 0 : STATE_IN) + x; y = acc,
// STATE_OUT = acc.
absl::Status Accumulate(const FakeExecutorInstance::RecordedBatch& batch,
                        std::vector<FakeExecutorInstance::FakeOutput>* out) {
  const auto x = Int32s(batch.inputs[kX]);
  const auto start = Int32s(batch.inputs[kStart]);
  const auto state = Int32s(batch.inputs[kStateIn]);
  std::string acc;
  for (size_t r = 0; r < x.size(); ++r) {
    acc += Int32Bytes((start[r] != 0 ? 0 : state[r]) + x[r]);
  }
  const int64_t rows = static_cast<int64_t>(x.size());
  out->push_back({{rows, 1}, acc});
  out->push_back({{rows, 1}, acc});
  return absl::OkStatus();
}

SequenceControl Flag(const std::string& name, SequenceControl::Kind kind) {
  return {name, kind, DataType::kInt32, Int32Bytes(0), Int32Bytes(1)};
}

class SequenceBatcherTest : public ::testing::Test {
 protected:
  SchedulerOptions Scheduler(Clock::Duration delay) {
    SchedulerOptions options;
    options.model_name = "acc";
    options.max_batch_size = 4;
    options.dynamic_batching = true;
    options.max_queue_delay = delay;
    options.inputs = {{"x", DataType::kInt32, {1}},
                      {"START", DataType::kInt32, {1}},
                      {"END", DataType::kInt32, {1}},
                      {"READY", DataType::kInt32, {1}},
                      {"CORRID", DataType::kUint64, {1}},
                      {"STATE_IN", DataType::kInt32, {1}}};
    options.outputs = {{"y", DataType::kInt32, {1}},
                       {"STATE_OUT", DataType::kInt32, {1}}};
    options.clock = &clock_;
    return options;
  }

  SequenceOptions Sequences(int max_active) {
    SequenceOptions options;
    options.max_active_sequences = max_active;
    options.max_sequence_idle = Ms(100);
    options.controls = {Flag("START", SequenceControl::Kind::kStart),
                        Flag("END", SequenceControl::Kind::kEnd),
                        Flag("READY", SequenceControl::Kind::kReady),
                        {"CORRID", SequenceControl::Kind::kCorrelationId,
                         DataType::kUint64, "", ""}};
    options.states = {
        {"STATE_IN", "STATE_OUT", DataType::kInt32, {1}, Int32Bytes(0)}};
    return options;
  }

  void Start(int max_active = 8, Clock::Duration delay = Ms(0)) {
    const SchedulerOptions scheduler = Scheduler(delay);
    FakeExecutorInstance::Options fake;
    fake.inputs = scheduler.inputs;
    auto instance = std::make_unique<FakeExecutorInstance>(fake);
    fake_ = instance.get();
    fake_->SetOutputFunction(Accumulate);
    std::vector<std::unique_ptr<ExecutorInstance>> instances;
    instances.push_back(std::move(instance));
    auto batcher = DynamicBatcher::Create(scheduler, std::move(instances));
    ASSERT_TRUE(batcher.ok()) << batcher.status();
    batcher_ = *std::move(batcher);
    auto sequencer = SequenceBatcher::Create(Sequences(max_active), scheduler,
                                             batcher_.get());
    ASSERT_TRUE(sequencer.ok()) << sequencer.status();
    sequencer_ = *std::move(sequencer);
  }

  void TearDown() override {
    if (fake_ != nullptr) fake_->AutoCompleteFromNow();
    sequencer_.reset();
    batcher_.reset();
  }

  std::unique_ptr<InferenceRequest> Request(
      int32_t x, CorrelationId id, bool start, bool end,
      std::shared_ptr<SinkRecord>* record) {
    auto request = std::make_unique<InferenceRequest>();
    data_.push_back(Int32Bytes(x));
    request->inputs.push_back(
        RequestInput{"x", DataType::kInt32, {1, 1}, data_.back()});
    request->sequence = SequenceFlags{std::move(id), start, end};
    *record = std::make_shared<SinkRecord>();
    request->sink = std::make_unique<RecordingSink>(*record);
    return request;
  }

  std::shared_ptr<SinkRecord> Send(int32_t x, CorrelationId id,
                                   bool start = false, bool end = false) {
    std::shared_ptr<SinkRecord> record;
    auto request = Request(x, std::move(id), start, end, &record);
    absl::Status s = sequencer_->Enqueue(&request);
    EXPECT_TRUE(s.ok()) << s;
    return record;
  }

  absl::Status Refused(std::unique_ptr<InferenceRequest> request) {
    absl::Status s = sequencer_->Enqueue(&request);
    EXPECT_NE(request, nullptr) << "a refused request stays with the caller";
    return s;
  }

  static int32_t Y(const std::shared_ptr<SinkRecord>& record) {
    EXPECT_TRUE(record->AwaitFinish().ok()) << record->AwaitFinish();
    const auto outputs = record->outputs();
    EXPECT_EQ(outputs.size(), 1u) << "state outputs are not returned";
    EXPECT_EQ(outputs.at(0).name, "y");
    return Int32s(outputs.at(0).data).at(0);
  }

  FakeClock clock_;
  std::deque<std::string> data_;
  FakeExecutorInstance* fake_ = nullptr;  // Owned by batcher_.
  std::unique_ptr<DynamicBatcher> batcher_;
  std::unique_ptr<SequenceBatcher> sequencer_;
};

TEST_F(SequenceBatcherTest, CarriesStateAndSetsControlsAlongOneSequence) {
  Start();
  auto a = Send(1, uint64_t{7}, /*start=*/true);
  fake_->AwaitBatches(1);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a), 1);
  auto b = Send(2, uint64_t{7});
  fake_->AwaitBatches(2);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(b), 3);
  auto c = Send(3, uint64_t{7}, false, /*end=*/true);
  fake_->AwaitBatches(3);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(c), 6);
  const auto batches = fake_->batches();
  EXPECT_THAT(Int32s(batches[0].inputs[kStart]), ElementsAre(1));
  EXPECT_THAT(Int32s(batches[1].inputs[kStart]), ElementsAre(0));
  EXPECT_THAT(Int32s(batches[1].inputs[kEnd]), ElementsAre(0));
  EXPECT_THAT(Int32s(batches[2].inputs[kEnd]), ElementsAre(1));
  for (const auto& batch : batches) {
    EXPECT_THAT(Int32s(batch.inputs[kReady]), ElementsAre(1));
    EXPECT_THAT(Uint64s(batch.inputs[kCorrId]), ElementsAre(7));
    EXPECT_EQ(batch.input_shapes[kStart], (Shape{1, 1}));
  }
  EXPECT_EQ(sequencer_->ActiveSequences(), 0) << "END releases the sequence";
}

TEST_F(SequenceBatcherTest, BatchesSequencesTogetherOneRequestEach) {
  Start(/*max_active=*/8, /*delay=*/Ms(10));
  auto a1 = Send(1, uint64_t{1}, true);
  auto a2 = Send(10, uint64_t{1});  // Waits for a1: it needs a1's state.
  auto b1 = Send(100, uint64_t{2}, true);
  clock_.AwaitWaiters(2);  // The batcher's queue delay and the idle thread.
  clock_.Advance(Ms(10));
  fake_->AwaitBatches(1);
  EXPECT_THAT(Int32s(fake_->batches()[0].inputs[kX]), ElementsAre(1, 100));
  EXPECT_THAT(Uint64s(fake_->batches()[0].inputs[kCorrId]), ElementsAre(1, 2));
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a1), 1);
  EXPECT_EQ(Y(b1), 100);
  clock_.Advance(Ms(10));
  fake_->AwaitBatches(2);
  EXPECT_THAT(Int32s(fake_->batches()[1].inputs[kX]), ElementsAre(10));
  EXPECT_THAT(Int32s(fake_->batches()[1].inputs[kStateIn]), ElementsAre(1));
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a2), 11);
}

TEST_F(SequenceBatcherTest, RefusesRequestsThatCannotBelongToASequence) {
  Start();
  std::shared_ptr<SinkRecord> r;
  absl::Status s = Refused(Request(1, uint64_t{5}, false, false, &r));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("must specify the START flag"));
  EXPECT_THAT(s.message(), HasSubstr("sequence 5"));

  auto no_id = Request(1, uint64_t{0}, true, false, &r);
  s = Refused(std::move(no_id));
  EXPECT_THAT(s.message(), HasSubstr("non-zero or non-empty correlation ID"));
  auto no_flags = Request(1, uint64_t{3}, true, false, &r);
  no_flags->sequence.reset();
  EXPECT_EQ(Refused(std::move(no_flags)).code(),
            absl::StatusCode::kInvalidArgument);

  auto control = Request(1, uint64_t{3}, true, false, &r);
  control->inputs.push_back(
      RequestInput{"START", DataType::kInt32, {1, 1}, data_.back()});
  EXPECT_THAT(Refused(std::move(control)).message(),
              HasSubstr("input 'START' is a sequence control"));

  auto two_rows = Request(1, uint64_t{3}, true, false, &r);
  data_.push_back(Int32Bytes(1) + Int32Bytes(2));
  two_rows->inputs[0] =
      RequestInput{"x", DataType::kInt32, {2, 1}, data_.back()};
  EXPECT_THAT(Refused(std::move(two_rows)).message(),
              HasSubstr("batch size 1, got 2"));

  EXPECT_THAT(
      Refused(Request(1, std::string("text"), true, false, &r)).message(),
      HasSubstr("takes an integer correlation ID"));
  auto state_out = Request(1, uint64_t{3}, true, false, &r);
  state_out->requested_outputs = {"STATE_OUT"};
  EXPECT_EQ(Refused(std::move(state_out)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sequencer_->ActiveSequences(), 0);
  EXPECT_TRUE(fake_->batches().empty());
}

TEST_F(SequenceBatcherTest, RequestAfterEndWithoutStartFailsInOrder) {
  Start();
  auto a = Send(1, uint64_t{9}, true);
  auto b = Send(2, uint64_t{9}, false, /*end=*/true);
  auto c = Send(3, uint64_t{9});  // Accepted: the sequence is still open.
  auto d = Send(4, uint64_t{9}, /*start=*/true);  // A new sequence, same ID.
  fake_->AwaitBatches(1);
  fake_->CompleteNextBatch();
  fake_->AwaitBatches(2);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a), 1);
  EXPECT_EQ(Y(b), 3);
  const absl::Status c_status = c->AwaitFinish();
  EXPECT_EQ(c_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c_status.message(), HasSubstr("the sequence ended"));
  fake_->AwaitBatches(3);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(d), 4) << "START resets the state";
}

TEST_F(SequenceBatcherTest, ReleasesASequenceIdleForMaxSequenceIdle) {
  Start();
  auto a = Send(1, uint64_t{4}, true);
  fake_->AwaitBatches(1);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a), 1);
  const Clock::TimePoint release = clock_.Now() + Ms(100);
  clock_.AwaitWaiterWithDeadline(release);
  clock_.Advance(Ms(99));
  clock_.AwaitWaiterWithDeadline(release);
  EXPECT_EQ(sequencer_->ActiveSequences(), 1);
  auto b = Send(2, uint64_t{4});  // Activity restarts the idle time.
  fake_->AwaitBatches(2);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(b), 3);
  const Clock::TimePoint later = clock_.Now() + Ms(100);
  clock_.AwaitWaiterWithDeadline(later);
  clock_.Advance(Ms(100));
  sequencer_->AwaitActiveSequences(0);
  std::shared_ptr<SinkRecord> r;
  absl::Status s = Refused(Request(3, uint64_t{4}, false, false, &r));
  EXPECT_THAT(s.message(), HasSubstr("must specify the START flag"));
}

TEST_F(SequenceBatcherTest, StartBeyondMaxActiveWaitsForAPlace) {
  Start(/*max_active=*/1);
  auto a1 = Send(1, uint64_t{1}, true);
  auto b1 = Send(5, uint64_t{2}, true);
  EXPECT_EQ(sequencer_->ActiveSequences(), 1);
  EXPECT_EQ(sequencer_->WaitingSequences(), 1);
  fake_->AwaitBatches(1);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a1), 1);
  EXPECT_FALSE(b1->finished());
  auto a2 = Send(2, uint64_t{1}, false, /*end=*/true);
  fake_->AwaitBatches(2);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(a2), 3);
  fake_->AwaitBatches(3);  // a's END gave b the place.
  EXPECT_EQ(sequencer_->WaitingSequences(), 0);
  fake_->CompleteNextBatch();
  EXPECT_EQ(Y(b1), 5);
}

TEST_F(SequenceBatcherTest, ShutdownAnswersEveryAcceptedRequest) {
  Start();
  auto a1 = Send(1, uint64_t{1}, true);
  auto a2 = Send(2, uint64_t{1});
  fake_->AutoCompleteFromNow();
  sequencer_->Shutdown();
  EXPECT_EQ(Y(a1), 1);
  EXPECT_EQ(Y(a2), 3);
  std::shared_ptr<SinkRecord> r;
  EXPECT_EQ(Refused(Request(1, uint64_t{8}, true, false, &r)).code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coalesce
