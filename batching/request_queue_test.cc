#include "batching/request_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "batching/recording_sink.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using Ms = std::chrono::milliseconds;

const Clock::TimePoint kT0 = Clock::TimePoint() + std::chrono::hours(1);

class RequestQueueTest : public ::testing::Test {
 protected:
  // Pushes a request tagged `id` (in its request id) at time `at`.
  std::shared_ptr<SinkRecord> Push(
      RequestQueue& queue, const std::string& id, uint64_t priority = 0,
      Clock::TimePoint at = kT0, std::optional<Clock::Duration> timeout = {},
      Clock::TimePoint deadline = Clock::TimePoint::max()) {
    QueuedRequest q;
    q.request = std::make_unique<InferenceRequest>();
    q.request->id = id;
    q.request->priority = priority;
    q.request->timeout = timeout;
    q.request->deadline = deadline;
    auto record = std::make_shared<SinkRecord>();
    q.request->sink = std::make_unique<RecordingSink>(record);
    q.enqueue_time = at;
    EXPECT_TRUE(queue.CheckRoom(priority).ok());
    queue.Push(std::move(q));
    return record;
  }

  static std::vector<std::string> Order(RequestQueue& queue) {
    std::vector<std::string> ids;
    queue.ForEachInServiceOrder([&ids](const RequestQueue::Ref& ref) {
      ids.push_back(ref.it->request->id);
      return true;
    });
    return ids;
  }

  static std::vector<absl::StatusCode> Codes(
      const std::vector<RequestQueue::Rejection>& rejected) {
    std::vector<absl::StatusCode> codes;
    for (const auto& r : rejected) codes.push_back(r.status.code());
    return codes;
  }

  SchedulerOptions options_;
};

TEST_F(RequestQueueTest, LevelsThenArrivalOrder) {
  options_.priority_levels = 3;
  options_.default_priority_level = 2;
  RequestQueue queue(options_);
  Push(queue, "low", 3);
  Push(queue, "default", 0);
  Push(queue, "high", 1);
  Push(queue, "out_of_range", 9);
  Push(queue, "two", 2);
  EXPECT_THAT(Order(queue),
              ElementsAre("high", "default", "out_of_range", "two", "low"));
  EXPECT_EQ(queue.LevelFor(9), 1u);
  EXPECT_EQ(queue.size(), 5u);
  EXPECT_THAT(queue.LevelSizes(), ElementsAre(1u, 3u, 1u));
}

TEST_F(RequestQueueTest, MaxQueueSizeIsPerLevel) {
  options_.priority_levels = 2;
  options_.default_priority_level = 1;
  options_.priority_queue_policy[2].max_queue_size = 1;
  RequestQueue queue(options_);
  Push(queue, "a", 2);
  EXPECT_EQ(queue.CheckRoom(2).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(queue.CheckRoom(1).ok());
}

TEST_F(RequestQueueTest, TimeoutOverrideOnlyShortensWhenAllowed) {
  options_.default_queue_policy.default_timeout = Ms(10);
  options_.default_queue_policy.allow_timeout_override = true;
  {
    RequestQueue queue(options_);
    Push(queue, "longer", 0, kT0, Ms(20));
    EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(10));
    Push(queue, "shorter", 0, kT0, Ms(3));
    EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(3));
  }
  options_.default_queue_policy.allow_timeout_override = false;
  RequestQueue queue(options_);
  Push(queue, "ignored", 0, kT0, Ms(3));
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(10));
}

TEST_F(RequestQueueTest, OverrideWithoutDefaultTimeoutSetsOne) {
  options_.default_queue_policy.allow_timeout_override = true;
  RequestQueue queue(options_);
  Push(queue, "a");
  EXPECT_EQ(queue.NextExpiry(), Clock::TimePoint::max());
  Push(queue, "b", 0, kT0, Ms(4));
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(4));
}

TEST_F(RequestQueueTest, ExpiryAnswersDeadlineTimeoutAndCancel) {
  options_.default_queue_policy.default_timeout = Ms(5);
  RequestQueue queue(options_);
  Push(queue, "deadline", 0, kT0, {}, kT0 + Ms(2));
  Push(queue, "timeout");
  auto cancelled = Push(queue, "cancelled", 0, kT0 + Ms(4));
  Push(queue, "young", 0, kT0 + Ms(4));
  cancelled->Cancel();
  EXPECT_TRUE(queue.TakeExpired(kT0 + Ms(1)).empty());
  EXPECT_THAT(Codes(queue.TakeExpired(kT0 + Ms(2))),
              ElementsAre(absl::StatusCode::kDeadlineExceeded,
                          absl::StatusCode::kCancelled));
  EXPECT_THAT(Codes(queue.TakeExpired(kT0 + Ms(5))),
              ElementsAre(absl::StatusCode::kUnavailable));
  EXPECT_THAT(Order(queue), ElementsAre("young"));
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(9));
}

TEST_F(RequestQueueTest, TakeCancelledScansEveryLevelWhateverItsExpiry) {
  options_.priority_levels = 2;
  options_.default_priority_level = 2;
  options_.default_queue_policy.max_queue_size = 2;
  options_.default_queue_policy.default_timeout = Ms(5);
  options_.default_queue_policy.timeout_action =
      QueuePolicy::TimeoutAction::kDelay;
  RequestQueue queue(options_);
  auto delayed = Push(queue, "delayed", 2);
  EXPECT_TRUE(queue.TakeExpired(kT0 + Ms(5)).empty());  // Now delayed.
  auto high = Push(queue, "high", 1, kT0 + Ms(5));
  Push(queue, "kept", 2, kT0 + Ms(5));
  EXPECT_EQ(queue.CheckRoom(2).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(queue.TakeCancelled().empty());
  delayed->Cancel();
  high->Cancel();
  const std::vector<RequestQueue::Rejection> rejected = queue.TakeCancelled();
  EXPECT_THAT(Codes(rejected), ElementsAre(absl::StatusCode::kCancelled,
                                           absl::StatusCode::kCancelled));
  EXPECT_EQ(rejected[0].request.request->id, "high");
  EXPECT_EQ(rejected[1].request.request->id, "delayed");
  EXPECT_THAT(Order(queue), ElementsAre("kept"));
  EXPECT_TRUE(queue.CheckRoom(2).ok());
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(10));
}

TEST_F(RequestQueueTest, DelayedRequestsGoBehindTheirLevel) {
  options_.priority_levels = 2;
  options_.default_priority_level = 2;
  options_.default_queue_policy.default_timeout = Ms(5);
  options_.default_queue_policy.timeout_action =
      QueuePolicy::TimeoutAction::kDelay;
  RequestQueue queue(options_);
  Push(queue, "old_high", 1);
  Push(queue, "old_low", 2);
  Push(queue, "new_high", 1, kT0 + Ms(3));
  EXPECT_TRUE(queue.TakeExpired(kT0 + Ms(5)).empty());
  EXPECT_THAT(Order(queue), ElementsAre("new_high", "old_high", "old_low"));
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(8));
}

TEST_F(RequestQueueTest, TakeRemovesAndForgetsExpiry) {
  options_.default_queue_policy.default_timeout = Ms(5);
  RequestQueue queue(options_);
  Push(queue, "a");
  Push(queue, "b", 0, kT0 + Ms(1));
  std::optional<RequestQueue::Ref> first;
  queue.ForEachInServiceOrder([&first](const RequestQueue::Ref& ref) {
    first = ref;
    return false;
  });
  EXPECT_EQ(queue.Take(*first).request->id, "a");
  EXPECT_EQ(queue.NextExpiry(), kT0 + Ms(6));
  EXPECT_THAT(Order(queue), ElementsAre("b"));
}

}  // namespace
}  // namespace coalesce
