#include "benchmarks/coalesce_bench/server_stats.h"

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

void SetDuration(inference::StatisticDuration* d, uint64_t count, uint64_t ns) {
  d->set_count(count);
  d->set_ns(ns);
}

// One ModelStatistics entry with simple, distinct numbers.
void AddEntry(inference::ModelStatisticsResponse* r, const std::string& name,
              const std::string& version, uint64_t scale) {
  auto* m = r->add_model_stats();
  m->set_name(name);
  m->set_version(version);
  m->set_inference_count(10 * scale);
  m->set_execution_count(4 * scale);
  auto* s = m->mutable_inference_stats();
  SetDuration(s->mutable_success(), 10 * scale, 1000 * scale);
  SetDuration(s->mutable_fail(), scale, 7 * scale);
  SetDuration(s->mutable_queue(), 10 * scale, 200 * scale);
  SetDuration(s->mutable_compute_input(), 10 * scale, 30 * scale);
  SetDuration(s->mutable_compute_infer(), 10 * scale, 500 * scale);
  SetDuration(s->mutable_compute_output(), 10 * scale, 40 * scale);
}

TEST(ServerStatsTest, SumsTheVersionsOfTheModelOnly) {
  inference::ModelStatisticsResponse r;
  AddEntry(&r, "m", "1", 1);
  AddEntry(&r, "m", "2", 2);
  AddEntry(&r, "other", "1", 100);
  auto s = SnapshotFromProto(r, "m", "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->inference_count, 30u);
  EXPECT_EQ(s->execution_count, 12u);
  EXPECT_EQ(s->success.count, 30u);
  EXPECT_EQ(s->queue.ns, 600u);
  EXPECT_EQ(s->compute_infer.ns, 1500u);
  EXPECT_EQ(s->fail.count, 3u);
}

TEST(ServerStatsTest, SelectsAVersion) {
  inference::ModelStatisticsResponse r;
  AddEntry(&r, "m", "1", 1);
  AddEntry(&r, "m", "2", 2);
  auto s = SnapshotFromProto(r, "m", "2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->inference_count, 20u);
}

TEST(ServerStatsTest, MissingModelIsNotFound) {
  inference::ModelStatisticsResponse r;
  AddEntry(&r, "m", "1", 1);
  EXPECT_EQ(SnapshotFromProto(r, "x", "").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(SnapshotFromProto(r, "m", "7").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ServerStatsTest, SplitIsPerRequestAveragesOfTheDeltas) {
  ServerStatsSnapshot before;
  before.inference_count = 100;
  before.execution_count = 40;
  before.success = {100, 5'000'000};
  before.queue = {100, 1'000'000};
  before.compute_input = {100, 200'000};
  before.compute_infer = {100, 3'000'000};
  before.compute_output = {100, 100'000};
  ServerStatsSnapshot after = before;
  // 60 more requests run in 20 executions (batches of 3 on average)
  after.inference_count = 160;
  after.execution_count = 60;
  after.success = {160, 5'000'000 + 60 * 900'000};     // 900 us each
  after.queue = {160, 1'000'000 + 60 * 250'000};       // 250 us each
  after.compute_input = {160, 200'000 + 60 * 10'000};  // 10 us each
  after.compute_infer = {160, 3'000'000 + 60 * 600'000};
  after.compute_output = {160, 100'000 + 60 * 5'000};
  after.fail = {2, 10};
  const ServerSideSplit s = SplitBetween(before, after);
  ASSERT_TRUE(s.valid);
  EXPECT_EQ(s.requests, 60u);
  EXPECT_EQ(s.failures, 2u);
  EXPECT_EQ(s.inferences, 60u);
  EXPECT_EQ(s.executions, 20u);
  EXPECT_DOUBLE_EQ(s.avg_request_us, 900);
  EXPECT_DOUBLE_EQ(s.avg_queue_us, 250);
  EXPECT_DOUBLE_EQ(s.avg_compute_input_us, 10);
  EXPECT_DOUBLE_EQ(s.avg_compute_infer_us, 600);
  EXPECT_DOUBLE_EQ(s.avg_compute_output_us, 5);
  EXPECT_DOUBLE_EQ(s.avg_batch_size, 3);
}

TEST(ServerStatsTest, NoActivityGivesZeroAverages) {
  ServerStatsSnapshot same;
  same.inference_count = 5;
  same.execution_count = 5;
  const ServerSideSplit s = SplitBetween(same, same);
  EXPECT_TRUE(s.valid);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.avg_queue_us, 0);
  EXPECT_EQ(s.avg_batch_size, 0);
}

TEST(ServerStatsTest, CountersGoingBackwardsAreInvalid) {
  ServerStatsSnapshot before;
  before.inference_count = 50;
  before.execution_count = 10;
  ServerStatsSnapshot after;  // the model was reloaded: counters restarted
  after.inference_count = 3;
  after.execution_count = 1;
  const ServerSideSplit s = SplitBetween(before, after);
  EXPECT_FALSE(s.valid);
  EXPECT_EQ(s.avg_batch_size, 0);
}

}  // namespace
}  // namespace coalesce::bench
