#include "batching/instance_timeline.h"

#include <chrono>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

using std::chrono::milliseconds;
using State = InstanceState;

class InstanceTimelineTest : public ::testing::Test {
 protected:
  Clock::TimePoint At(int ms) const { return t0_ + milliseconds(ms); }
  TimeInterval Span(int begin_ms, int end_ms) const {
    return {At(begin_ms), At(end_ms)};
  }
  // A batch whose steps follow each other: gather, copy in, run, copy out,
  // scatter, starting at `begin_ms`, lasting the given milliseconds.
  BatchIntervals Serial(int begin_ms, int gather, int in, int run, int out,
                        int scatter) const {
    BatchIntervals b;
    int t = begin_ms;
    auto next = [&](int d) {
      TimeInterval i = Span(t, t + d);
      t += d;
      return i;
    };
    b.gather = next(gather);
    b.copy_in = next(in);
    b.run = next(run);
    b.copy_out = next(out);
    b.scatter = next(scatter);
    return b;
  }

  const Clock::TimePoint t0_ = Clock::TimePoint() + std::chrono::hours(1);
};

TEST_F(InstanceTimelineTest, NamesEveryState) {
  EXPECT_STREQ(InstanceStateName(State::kComputing), "computing");
  EXPECT_STREQ(InstanceStateName(State::kCopyingIn), "copying_in");
  EXPECT_STREQ(InstanceStateName(State::kCopyingOut), "copying_out");
  EXPECT_STREQ(InstanceStateName(State::kBlockedPipeline), "blocked_pipeline");
  EXPECT_STREQ(InstanceStateName(State::kIdleAssembling), "idle_assembling");
  EXPECT_STREQ(InstanceStateName(State::kIdleEmptyQueue), "idle_empty_queue");
}

TEST_F(InstanceTimelineTest, IdleTimeFollowsTheQueue) {
  InstanceTimeline timeline(At(0));
  timeline.QueueChanged(At(10), /*empty=*/false);
  timeline.QueueChanged(At(13), /*empty=*/false);  // no change
  timeline.QueueChanged(At(14), /*empty=*/true);
  const InstanceStateTotals totals = timeline.Totals(At(20));
  EXPECT_EQ(totals[State::kIdleEmptyQueue], milliseconds(16));
  EXPECT_EQ(totals[State::kIdleAssembling], milliseconds(4));
  EXPECT_EQ(totals.Total(), milliseconds(20));
}

TEST_F(InstanceTimelineTest, OneBatchSplitsIntoItsSteps) {
  InstanceTimeline timeline(At(0));
  timeline.QueueChanged(At(10), false);
  const uint64_t ticket = timeline.BatchTaken(At(12));
  timeline.QueueChanged(At(12), true);
  // Taken at 12, released at 25: 1 gather, 2 in, 5 run, 3 out, 1 scatter,
  // then 1 ms before the release is noticed.
  timeline.BatchReleased(ticket, At(25), Serial(12, 1, 2, 5, 3, 1));
  const InstanceStateTotals totals = timeline.Totals(At(30));
  EXPECT_EQ(totals[State::kIdleEmptyQueue], milliseconds(10 + 5));
  EXPECT_EQ(totals[State::kIdleAssembling], milliseconds(2));
  EXPECT_EQ(totals[State::kCopyingIn], milliseconds(3));
  EXPECT_EQ(totals[State::kComputing], milliseconds(5));
  EXPECT_EQ(totals[State::kCopyingOut], milliseconds(4));
  EXPECT_EQ(totals[State::kBlockedPipeline], milliseconds(1));
  EXPECT_EQ(totals.Total(), milliseconds(30));
}

TEST_F(InstanceTimelineTest, ComputeHidesOverlappingCopies) {
  InstanceTimeline timeline(At(0));
  timeline.QueueChanged(At(0), false);
  // Double buffering: batch B is gathered and copied in while A runs.
  const uint64_t a = timeline.BatchTaken(At(0));
  const uint64_t b = timeline.BatchTaken(At(4));
  // A: copy in [0,2), run [2,10), copy out [10,12).
  timeline.BatchReleased(a, At(12), Serial(0, 0, 2, 8, 2, 0));
  // Nothing after 4 (when B was taken) is final yet.
  EXPECT_EQ(timeline.Totals(At(12)).Total(), milliseconds(4));
  // B: gather [4,6), copy in [6,9) under A's run; run [10,16); out [16,17).
  BatchIntervals steps;
  steps.gather = Span(4, 6);
  steps.copy_in = Span(6, 9);
  steps.run = Span(10, 16);
  steps.copy_out = Span(16, 17);
  timeline.BatchReleased(b, At(18), steps);
  timeline.QueueChanged(At(18), true);
  const InstanceStateTotals totals = timeline.Totals(At(20));
  EXPECT_EQ(totals[State::kCopyingIn], milliseconds(2));        // [0,2)
  EXPECT_EQ(totals[State::kComputing], milliseconds(14));       // [2,16)
  EXPECT_EQ(totals[State::kCopyingOut], milliseconds(1));       // [16,17)
  EXPECT_EQ(totals[State::kBlockedPipeline], milliseconds(1));  // [17,18)
  EXPECT_EQ(totals[State::kIdleEmptyQueue], milliseconds(2));
  EXPECT_EQ(totals.Total(), milliseconds(20));
}

TEST_F(InstanceTimelineTest, TotalsNeverDecrease) {
  InstanceTimeline timeline(At(0));
  timeline.QueueChanged(At(1), false);
  const uint64_t a = timeline.BatchTaken(At(2));
  const InstanceStateTotals before = timeline.Totals(At(50));
  timeline.BatchReleased(a, At(60), Serial(2, 0, 10, 10, 10, 0));
  const InstanceStateTotals after = timeline.Totals(At(60));
  for (int s = 0; s < kInstanceStates; ++s) {
    EXPECT_GE(after.time[s], before.time[s]) << s;
  }
  EXPECT_EQ(after[State::kBlockedPipeline], milliseconds(28));
  EXPECT_EQ(after.Total(), milliseconds(60));
}

TEST_F(InstanceTimelineTest, StepsOutsideTheSlotsHoldingTimeAreClipped) {
  InstanceTimeline timeline(At(0));
  const uint64_t a = timeline.BatchTaken(At(10));
  // A clock skew put the copy in before the batch was taken.
  timeline.BatchReleased(a, At(20), Serial(5, 0, 10, 5, 10, 0));
  const InstanceStateTotals totals = timeline.Totals(At(20));
  EXPECT_EQ(totals[State::kCopyingIn], milliseconds(5));   // [10,15)
  EXPECT_EQ(totals[State::kComputing], milliseconds(5));   // [15,20)
  EXPECT_EQ(totals[State::kCopyingOut], milliseconds(0));  // after release
  EXPECT_EQ(totals.Total(), milliseconds(20));
}

TEST_F(InstanceTimelineTest, UnknownTicketIsIgnored) {
  InstanceTimeline timeline(At(0));
  timeline.BatchReleased(42, At(5), Serial(0, 1, 1, 1, 1, 1));
  EXPECT_EQ(timeline.Totals(At(5))[State::kIdleEmptyQueue], milliseconds(5));
}

}  // namespace
}  // namespace coalesce
