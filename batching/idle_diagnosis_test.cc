#include "batching/idle_diagnosis.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using S = InstanceState;

// A window whose states take the given milliseconds (of 1000 in all).
InstanceWindow Window(int computing, int copy_in, int copy_out, int blocked,
                      int assembling, int empty) {
  InstanceWindow w;
  auto set = [&](S s, int ms) {
    w.states.time[static_cast<int>(s)] = milliseconds(ms);
  };
  set(S::kComputing, computing);
  set(S::kCopyingIn, copy_in);
  set(S::kCopyingOut, copy_out);
  set(S::kBlockedPipeline, blocked);
  set(S::kIdleAssembling, assembling);
  set(S::kIdleEmptyQueue, empty);
  w.executions = 100;
  w.inferences = 400;
  w.max_batch_size = 8;
  w.max_queue_delay = milliseconds(5);
  return w;
}

TEST(IdleDiagnosisTest, NothingObserved) {
  EXPECT_EQ(DiagnoseInstance(InstanceWindow{}).reason, "no_traffic");
}

TEST(IdleDiagnosisTest, NoTraffic) {
  InstanceWindow w = Window(0, 0, 0, 0, 20, 980);
  w.executions = w.inferences = 0;
  const IdleDiagnosis d = DiagnoseInstance(w);
  EXPECT_EQ(d.reason, "no_traffic");
  EXPECT_THAT(d.detail, HasSubstr("98%"));
}

TEST(IdleDiagnosisTest, Saturated) {
  const IdleDiagnosis d = DiagnoseInstance(Window(800, 50, 50, 50, 50, 0));
  EXPECT_EQ(d.reason, "saturated");
  EXPECT_THAT(d.detail, HasSubstr("busy 90%"));
}

TEST(IdleDiagnosisTest, CopyInBound) {
  // Busy 50%: 20% compute, 25% copy in (50% of busy), 5% copy out.
  const IdleDiagnosis d = DiagnoseInstance(Window(200, 250, 50, 0, 100, 400));
  EXPECT_EQ(d.reason, "copy_bound");
  EXPECT_THAT(d.detail, HasSubstr("copy-in takes 50% of busy time"));
}

TEST(IdleDiagnosisTest, CopyOutBound) {
  const IdleDiagnosis d = DiagnoseInstance(Window(200, 0, 200, 0, 100, 500));
  EXPECT_EQ(d.reason, "copy_bound");
  EXPECT_THAT(d.detail, HasSubstr("copy-out takes 50% of busy time"));
}

TEST(IdleDiagnosisTest, PipelineBlocked) {
  const IdleDiagnosis d = DiagnoseInstance(Window(500, 10, 10, 300, 80, 100));
  EXPECT_EQ(d.reason, "pipeline_blocked");
  EXPECT_THAT(d.detail, HasSubstr("30%"));
}

TEST(IdleDiagnosisTest, Assembling) {
  const IdleDiagnosis d = DiagnoseInstance(Window(400, 10, 10, 0, 400, 180));
  EXPECT_EQ(d.reason, "assembling");
  EXPECT_THAT(d.detail, HasSubstr("40% of the time (max_queue_delay 5 ms)"));
}

TEST(IdleDiagnosisTest, WaitingForTheLatencyTarget) {
  InstanceWindow w = Window(400, 10, 10, 0, 400, 180);
  w.latency_target = milliseconds(50);
  w.target_wait = std::chrono::microseconds(12500);
  w.target_batch_size = 16;
  const IdleDiagnosis d = DiagnoseInstance(w);
  EXPECT_EQ(d.reason, "latency_target");
  EXPECT_THAT(d.detail, HasSubstr("40% of the time, as the latency target "
                                  "allows (p99 50 ms: the batcher waits up to "
                                  "12.5 ms for batches of 16)"));
}

TEST(IdleDiagnosisTest, SmallBatches) {
  InstanceWindow w = Window(200, 10, 10, 0, 80, 700);
  w.executions = 10;
  w.inferences = 13;
  const IdleDiagnosis d = DiagnoseInstance(w);
  EXPECT_EQ(d.reason, "small_batches");
  EXPECT_THAT(d.detail, HasSubstr("batches average 1.3 rows while the queue is "
                                  "empty 70% of the time"));
}

TEST(IdleDiagnosisTest, LowLoadWhenTheModelDoesNotBatch) {
  InstanceWindow w = Window(200, 10, 10, 0, 80, 700);
  w.max_batch_size = 0;
  w.inferences = w.executions;
  const IdleDiagnosis d = DiagnoseInstance(w);
  EXPECT_EQ(d.reason, "low_load");
  EXPECT_THAT(d.detail, HasSubstr("queue empty 70% of the time"));
}

TEST(IdleDiagnosisTest, NoDominantCause) {
  const IdleDiagnosis d = DiagnoseInstance(Window(600, 10, 10, 100, 100, 180));
  EXPECT_EQ(d.reason, "ok");
  EXPECT_THAT(d.detail, HasSubstr("busy 62%, queue empty 18%, batching wait "
                                  "10%, blocked 10%"));
}

}  // namespace
}  // namespace coalesce
