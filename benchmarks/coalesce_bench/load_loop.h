// The load generators: closed loop (fixed concurrency) and open loop
// (requests on an arrival schedule), both over an InferSender.
//
// Closed loop: `concurrency` requests are in flight at all times; each
// completion starts the next request on the same lane. Latency is measured
// from the send to the completion.
//
// Open loop: one sender thread walks an ArrivalSchedule and sends each
// request at its scheduled time, whatever the state of earlier requests.
// Latency is measured from the request's SCHEDULED time, so when the client
// falls behind (a late wake-up, or max_inflight reached), the delay counts
// against the latency instead of being hidden (no coordinated omission).
//
// Both record into a WindowRecorder. Start() once; BeginStop() makes the
// generator stop sending; WaitDrained() returns once every request it started
// has completed (bounded by the sender's request deadline);
// REQUIRES: BeginStop() first. Thread-safe; the
// destructor stops and drains.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_LOAD_LOOP_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_LOAD_LOOP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"
#include "benchmarks/coalesce_bench/arrival_schedule.h"
#include "benchmarks/coalesce_bench/infer_sender.h"
#include "benchmarks/coalesce_bench/window_recorder.h"

namespace coalesce::bench {

class LoadGenerator {
 public:
  virtual ~LoadGenerator() = default;
  virtual void Start() = 0;
  virtual void BeginStop() = 0;
  virtual void WaitDrained() = 0;
  // The fraction of wall time the generator's own sending thread spent on
  // a CPU while it ran (0 when it has none, or before it finished).
  virtual double sender_thread_busy_fraction() const { return 0; }
};

// Counts requests in flight and whether sending has stopped; the part both
// generators share.
class InflightTracker {
 public:
  // False once stopped: the caller must not send. Otherwise counts one more.
  bool TryAcquire();
  // One request completed.
  void Release();
  // Waits until fewer than `limit` are in flight or stopped; true if a
  // request may be sent (and counts it).
  bool AcquireBelow(int64_t limit);
  void Stop();
  bool stopped() const;
  // Returns once stopped and nothing is in flight.
  void WaitIdle();
  int64_t inflight() const;

 private:
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  int64_t inflight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

class ClosedLoopGenerator : public LoadGenerator {
 public:
  // REQUIRES: concurrency >= 1; sender, recorder, clock outlive this.
  ClosedLoopGenerator(int concurrency, InferSender* sender,
                      WindowRecorder* recorder, Clock* clock);
  ~ClosedLoopGenerator() override;

  void Start() override;
  void BeginStop() override { tracker_.Stop(); }
  void WaitDrained() override { tracker_.WaitIdle(); }

 private:
  // Sends on `lane` a request already counted by tracker_. A completion that
  // runs inline inside Send defers its follow-up to the outermost call on
  // the thread, so the stack never grows with the number of requests.
  void IssueAcquired(int lane);
  void SendOne(int lane);
  void OnDone(int lane, Clock::TimePoint sent, const absl::Status& status);

  const int concurrency_;
  InferSender* const sender_;
  WindowRecorder* const recorder_;
  Clock* const clock_;
  InflightTracker tracker_;
};

class OpenLoopGenerator : public LoadGenerator {
 public:
  // REQUIRES: max_inflight >= 1; sender, recorder, clock outlive this.
  OpenLoopGenerator(ArrivalSchedule schedule, int max_inflight, int lanes,
                    InferSender* sender, WindowRecorder* recorder,
                    Clock* clock);
  ~OpenLoopGenerator() override;

  void Start() override;
  void BeginStop() override { tracker_.Stop(); }
  void WaitDrained() override;
  double sender_thread_busy_fraction() const override {
    return busy_fraction_.load(std::memory_order_relaxed);
  }

 private:
  void SendLoop();
  // Sleeps until `t` in slices, so a stop is noticed; false when stopped.
  bool SleepUntilOrStopped(Clock::TimePoint t);

  ArrivalSchedule schedule_;  // used only by the sender thread
  const int max_inflight_;
  const int lanes_;
  InferSender* const sender_;
  WindowRecorder* const recorder_;
  Clock* const clock_;
  InflightTracker tracker_;
  std::thread thread_;
  std::atomic<double> busy_fraction_{0};
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_LOAD_LOOP_H_
