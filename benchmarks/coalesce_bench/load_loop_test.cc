// The load generators against hand-stepped fakes: a sender that holds
// requests until the test completes them, or completes them inline after
// advancing a fake clock. No real time is involved.
#include "benchmarks/coalesce_bench/load_loop.h"

#include <deque>
#include <utility>
#include <vector>

#include "batching/fake_clock.h"
#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

using std::chrono::milliseconds;

// Holds every request until the test completes it.
class HeldSender : public InferSender {
 public:
  void Send(int lane, Done done) override {
    absl::MutexLock lock(&mu_);
    pending_.push_back({lane, std::move(done)});
  }
  size_t pending() {
    absl::MutexLock lock(&mu_);
    return pending_.size();
  }
  // Waits (bounded) until at least n requests are pending; false on timeout.
  bool WaitForPending(size_t n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return pending_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(30));
  }
  std::vector<int> lanes() {
    absl::MutexLock lock(&mu_);
    std::vector<int> out;
    for (const auto& p : pending_) out.push_back(p.first);
    return out;
  }
  // Completes the oldest pending request with `status`; returns its lane.
  int CompleteOldest(const absl::Status& status) {
    std::pair<int, Done> call;
    {
      absl::MutexLock lock(&mu_);
      call = std::move(pending_.front());
      pending_.pop_front();
    }
    call.second(status);
    return call.first;
  }

 private:
  absl::Mutex mu_;
  std::deque<std::pair<int, Done>> pending_ ABSL_GUARDED_BY(mu_);
};

TEST(ClosedLoopTest, KeepsConcurrencyRequestsInFlight) {
  HeldSender sender;
  WindowRecorder recorder;
  FakeClock clock;
  clock.set_sleep_advances();
  ClosedLoopGenerator loop(/*concurrency=*/3, &sender, &recorder, &clock);
  loop.Start();
  EXPECT_EQ(sender.pending(), 3u);
  EXPECT_EQ(sender.lanes(), (std::vector<int>{0, 1, 2}));

  clock.Advance(milliseconds(4));
  EXPECT_EQ(sender.CompleteOldest(absl::OkStatus()), 0);
  EXPECT_EQ(sender.pending(), 3u);  // lane 0 sent again at once
  EXPECT_EQ(sender.lanes(), (std::vector<int>{1, 2, 0}));
  sender.CompleteOldest(absl::UnavailableError("queue full"));

  WindowRecord w = recorder.TakeWindow();
  EXPECT_EQ(w.latencies_ns, std::vector<int64_t>{4'000'000});
  EXPECT_EQ(w.errors.at(static_cast<int>(absl::StatusCode::kUnavailable)), 1);
  EXPECT_EQ(w.error_examples.begin()->second, "queue full");

  loop.BeginStop();
  while (sender.pending() > 0) sender.CompleteOldest(absl::OkStatus());
  loop.WaitDrained();  // returns: nothing in flight, nothing re-sent
  EXPECT_EQ(sender.pending(), 0u);
  EXPECT_EQ(recorder.completed_total(), 5);
}

// Completes every request inside Send; stops the generator after `limit`.
class InlineSender : public InferSender {
 public:
  explicit InlineSender(int limit) : limit_(limit) {}
  void set_generator(LoadGenerator* g) { generator_ = g; }
  void Send(int lane, Done done) override {
    if (++sends_ == limit_) generator_->BeginStop();
    done(absl::OkStatus());
  }
  int sends() const { return sends_; }

 private:
  const int limit_;
  int sends_ = 0;
  LoadGenerator* generator_ = nullptr;
};

TEST(ClosedLoopTest, InlineCompletionsDoNotGrowTheStack) {
  InlineSender sender(/*limit=*/200000);
  WindowRecorder recorder;
  FakeClock clock;
  clock.set_sleep_advances();
  ClosedLoopGenerator loop(/*concurrency=*/2, &sender, &recorder, &clock);
  sender.set_generator(&loop);
  loop.Start();  // runs the whole chain on this thread, then stops
  loop.WaitDrained();
  EXPECT_EQ(sender.sends(), 200000);
  EXPECT_EQ(recorder.completed_total(), 200000);
}

// Takes `service` of fake time per request (inline), stops after `limit`.
class ServiceTimeSender : public InferSender {
 public:
  ServiceTimeSender(FakeClock* clock, milliseconds service, int limit)
      : clock_(clock), service_(service), limit_(limit) {}
  void set_generator(LoadGenerator* g) { generator_ = g; }
  void Send(int lane, Done done) override {
    send_times_.push_back(clock_->Now());
    if (static_cast<int>(send_times_.size()) == limit_) generator_->BeginStop();
    clock_->Advance(service_);
    done(absl::OkStatus());
  }
  std::vector<Clock::TimePoint> send_times_;

 private:
  FakeClock* clock_;
  const milliseconds service_;
  const int limit_;
  LoadGenerator* generator_ = nullptr;
};

ArrivalSchedule ConstantSchedule(double rate) {
  ArrivalSchedule::Options o;
  o.kind = ArrivalKind::kConstant;
  o.rate_per_s = rate;
  return *ArrivalSchedule::Create(o);
}

TEST(OpenLoopTest, SendsOnScheduleAndMeasuresFromIt) {
  FakeClock clock;
  clock.set_sleep_advances();
  ServiceTimeSender sender(&clock, milliseconds(1), /*limit=*/50);
  WindowRecorder recorder;
  OpenLoopGenerator loop(ConstantSchedule(/*rate=*/100), /*max_inflight=*/10,
                         /*lanes=*/2, &sender, &recorder, &clock);
  sender.set_generator(&loop);
  const Clock::TimePoint start = clock.Now();
  loop.Start();
  loop.WaitDrained();
  ASSERT_EQ(sender.send_times_.size(), 50u);
  for (size_t k = 0; k < 50; ++k) {
    EXPECT_EQ(sender.send_times_[k] - start, milliseconds(10 * k)) << k;
  }
  WindowRecord w = recorder.TakeWindow();
  ASSERT_EQ(w.latencies_ns.size(), 50u);
  for (int64_t l : w.latencies_ns) EXPECT_EQ(l, 1'000'000);
  EXPECT_EQ(w.sends, 50);
  EXPECT_EQ(w.late_sends, 0);
}

TEST(OpenLoopTest, FallingBehindCountsTheDelay) {
  // Requests every 10 ms, each holding the (single) sender for 25 ms:
  // request k is scheduled at 10k but sent at 25k, and completes at 25k+25.
  // Its latency is measured from 10k: 15k + 25 ms.
  FakeClock clock;
  clock.set_sleep_advances();
  ServiceTimeSender sender(&clock, milliseconds(25), /*limit=*/20);
  WindowRecorder recorder;
  OpenLoopGenerator loop(ConstantSchedule(/*rate=*/100), /*max_inflight=*/10,
                         /*lanes=*/1, &sender, &recorder, &clock);
  sender.set_generator(&loop);
  loop.Start();
  loop.WaitDrained();
  WindowRecord w = recorder.TakeWindow();
  ASSERT_EQ(w.latencies_ns.size(), 20u);
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(w.latencies_ns[k], (15 * k + 25) * 1'000'000LL) << k;
  }
  EXPECT_EQ(w.late_sends, 19);  // all but the first went out late
  EXPECT_EQ(w.max_send_lag_ns, 15 * 19 * 1'000'000LL);
}

TEST(OpenLoopTest, MaxInflightHoldsSendsBack) {
  FakeClock clock;
  clock.set_sleep_advances();
  HeldSender sender;
  WindowRecorder recorder;
  OpenLoopGenerator loop(ConstantSchedule(/*rate=*/1000), /*max_inflight=*/2,
                         /*lanes=*/1, &sender, &recorder, &clock);
  loop.Start();
  // The sender thread sends two, then waits for a free slot, which only a
  // completion gives it.
  ASSERT_TRUE(sender.WaitForPending(2));
  EXPECT_EQ(sender.pending(), 2u);
  loop.BeginStop();
  while (sender.pending() > 0) sender.CompleteOldest(absl::OkStatus());
  loop.WaitDrained();
  EXPECT_EQ(recorder.completed_total(), 2);
}

}  // namespace
}  // namespace coalesce::bench
