// ModelStats: histograms place each value in the first bucket whose bound
// is at or above it (Prometheus' "le"), agree in count with the totals, and
// failures are split by reason.
#include "batching/model_stats.h"

#include <chrono>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(FixedHistogramTest, ValuesLandInTheFirstBucketAtOrAboveThem) {
  const int64_t bounds[] = {1, 10, 100};
  FixedHistogram<3> h;
  for (int64_t v : {0, 1, 2, 10, 11, 100, 101, 5000}) h.Add(v, bounds);
  EXPECT_EQ(h.counts[0], 2u);  // 0, 1
  EXPECT_EQ(h.counts[1], 2u);  // 2, 10
  EXPECT_EQ(h.counts[2], 2u);  // 11, 100
  EXPECT_EQ(h.counts[3], 2u);  // above every bound
}

TEST(ModelStatsTest, HistogramsMatchTheTotals) {
  ModelStats stats;
  BatchDurations batch;
  batch.compute_input = microseconds(200);
  batch.compute_infer = milliseconds(3);
  batch.compute_output = microseconds(50);
  stats.RecordSuccess(microseconds(80), milliseconds(4), batch);
  stats.RecordSuccess(milliseconds(30), milliseconds(34), batch);
  stats.RecordExecution(2, batch);
  stats.RecordExecution(64, batch);
  stats.RecordFailure(milliseconds(1), FailureReason::kTimedOut);
  stats.RecordFailure(milliseconds(0), FailureReason::kRejected);
  const ModelStatsSnapshot s = stats.Snapshot();
  auto total = [](const auto& h) {
    uint64_t n = 0;
    for (uint64_t c : h.counts) n += c;
    return n;
  };
  EXPECT_EQ(total(s.success_hist), s.success.count);
  EXPECT_EQ(total(s.queue_hist), 2u);
  EXPECT_EQ(s.queue_hist.counts[0], 1u);          // 80 us <= 0.1 ms
  EXPECT_EQ(s.queue_hist.counts[8], 1u);          // 30 ms in (25, 50] ms
  EXPECT_EQ(s.compute_infer_hist.counts[5], 2u);  // 3 ms in (2.5, 5] ms
  EXPECT_EQ(total(s.batch_size_hist), s.execution_count);
  EXPECT_EQ(s.batch_size_hist.counts[1], 1u);  // 2
  EXPECT_EQ(s.batch_size_hist.counts[6], 1u);  // 64
  EXPECT_EQ(s.fail.count, 2u);
  EXPECT_EQ(s.failures[static_cast<int>(FailureReason::kTimedOut)], 1u);
  EXPECT_EQ(s.failures[static_cast<int>(FailureReason::kRejected)], 1u);
}

}  // namespace
}  // namespace coalesce
