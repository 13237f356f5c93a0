#include "benchmarks/coalesce_bench/load_loop.h"

#include <sys/prctl.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "benchmarks/coalesce_bench/cpu_usage.h"

namespace coalesce::bench {
namespace {

// How long the open-loop sender sleeps at most before checking for a stop.
constexpr std::chrono::milliseconds kStopCheck{20};

void RecordCompletion(WindowRecorder* recorder, int64_t latency_ns,
                      const absl::Status& status) {
  if (status.ok()) {
    recorder->RecordSuccess(latency_ns);
  } else {
    recorder->RecordError(static_cast<int>(status.code()),
                          std::string(status.message()));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// InflightTracker

bool InflightTracker::TryAcquire() {
  absl::MutexLock lock(&mu_);
  if (stopped_) return false;
  ++inflight_;
  return true;
}

void InflightTracker::Release() {
  absl::MutexLock lock(&mu_);
  --inflight_;
  changed_.SignalAll();
}

bool InflightTracker::AcquireBelow(int64_t limit) {
  absl::MutexLock lock(&mu_);
  while (!stopped_ && inflight_ >= limit) changed_.Wait(&mu_);
  if (stopped_) return false;
  ++inflight_;
  return true;
}

void InflightTracker::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  changed_.SignalAll();
}

bool InflightTracker::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

void InflightTracker::WaitIdle() {
  absl::MutexLock lock(&mu_);
  while (!stopped_ || inflight_ > 0) changed_.Wait(&mu_);
}

int64_t InflightTracker::inflight() const {
  absl::MutexLock lock(&mu_);
  return inflight_;
}

// ---------------------------------------------------------------------------
// ClosedLoopGenerator

ClosedLoopGenerator::ClosedLoopGenerator(int concurrency, InferSender* sender,
                                         WindowRecorder* recorder, Clock* clock)
    : concurrency_(concurrency),
      sender_(sender),
      recorder_(recorder),
      clock_(clock) {}

ClosedLoopGenerator::~ClosedLoopGenerator() {
  tracker_.Stop();
  tracker_.WaitIdle();
}

void ClosedLoopGenerator::Start() {
  for (int lane = 0; lane < concurrency_; ++lane) {
    if (!tracker_.TryAcquire()) return;
    IssueAcquired(lane);
  }
}

void ClosedLoopGenerator::IssueAcquired(int lane) {
  // Requests whose completion ran inline, waiting for the outermost
  // IssueAcquired on this thread.
  static thread_local int depth = 0;
  static thread_local std::vector<std::pair<ClosedLoopGenerator*, int>>
      deferred;
  if (depth > 0) {
    deferred.emplace_back(this, lane);
    return;
  }
  depth = 1;
  SendOne(lane);
  while (!deferred.empty()) {
    auto [generator, next_lane] = deferred.back();
    deferred.pop_back();
    generator->SendOne(next_lane);
  }
  depth = 0;
}

void ClosedLoopGenerator::SendOne(int lane) {
  const Clock::TimePoint sent = clock_->Now();
  sender_->Send(lane, [this, lane, sent](const absl::Status& status) {
    OnDone(lane, sent, status);
  });
}

void ClosedLoopGenerator::OnDone(int lane, Clock::TimePoint sent,
                                 const absl::Status& status) {
  RecordCompletion(recorder_, (clock_->Now() - sent).count(), status);
  // Count the follow-up before releasing this one: in flight never drops to
  // zero while the loop runs, so WaitIdle cannot return early.
  if (tracker_.TryAcquire()) IssueAcquired(lane);
  tracker_.Release();
}

// ---------------------------------------------------------------------------
// OpenLoopGenerator

OpenLoopGenerator::OpenLoopGenerator(ArrivalSchedule schedule, int max_inflight,
                                     int lanes, InferSender* sender,
                                     WindowRecorder* recorder, Clock* clock)
    : schedule_(std::move(schedule)),
      max_inflight_(max_inflight),
      lanes_(std::max(lanes, 1)),
      sender_(sender),
      recorder_(recorder),
      clock_(clock) {}

OpenLoopGenerator::~OpenLoopGenerator() {
  tracker_.Stop();
  WaitDrained();
}

void OpenLoopGenerator::Start() {
  thread_ = std::thread([this] { SendLoop(); });
}

void OpenLoopGenerator::WaitDrained() {
  if (thread_.joinable()) thread_.join();
  tracker_.WaitIdle();
}

bool OpenLoopGenerator::SleepUntilOrStopped(Clock::TimePoint t) {
  while (!tracker_.stopped()) {
    const Clock::TimePoint now = clock_->Now();
    if (now >= t) return true;
    clock_->SleepUntil(std::min(t, now + kStopCheck));
  }
  return false;
}

void OpenLoopGenerator::SendLoop() {
  // Linux lets a sleep overrun by the thread's timer slack (50 us by
  // default), and every overrun is a late send that counts in the latency;
  // 1 ns makes wake-ups as punctual as the scheduler allows.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const double cpu_start = ThreadCpuSeconds();
  const Clock::TimePoint start = clock_->Now();
  for (int64_t lane = 0;; ++lane) {  // ends when stopped
    const Clock::TimePoint scheduled = start + schedule_.Next();
    if (!SleepUntilOrStopped(scheduled)) break;
    if (!tracker_.AcquireBelow(max_inflight_)) break;
    recorder_->RecordSend((clock_->Now() - scheduled).count());
    sender_->Send(static_cast<int>(lane % lanes_),
                  [this, scheduled](const absl::Status& status) {
                    // From the scheduled time: a late send counts.
                    RecordCompletion(
                        recorder_, (clock_->Now() - scheduled).count(), status);
                    tracker_.Release();
                  });
  }
  const double wall =
      std::chrono::duration<double>(clock_->Now() - start).count();
  if (wall > 0) {
    busy_fraction_.store((ThreadCpuSeconds() - cpu_start) / wall,
                         std::memory_order_relaxed);
  }
}

}  // namespace coalesce::bench
