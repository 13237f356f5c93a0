#include "benchmarks/coalesce_bench/metrics_scrape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coalesce::bench {
namespace {

using ::testing::ElementsAre;

constexpr char kScrape[] = R"(# HELP coalesce_instance_state_seconds_total Time
# TYPE coalesce_instance_state_seconds_total counter
coalesce_instance_state_seconds_total{model="m",version="1",model_instance="0",state="computing"} 3
coalesce_instance_state_seconds_total{model="m",version="1",model_instance="0",state="idle_empty_queue"} 1
coalesce_instance_state_seconds_total{model="m",version="2",model_instance="0",state="computing"} 1
coalesce_instance_state_seconds_total{model="m",version="1",model_instance="1",state="copying_in"} 0.5
coalesce_instance_state_seconds_total{model="other",version="1",model_instance="0",state="computing"} 9
coalesce_instance_state_seconds_total_bogus{model="m",version="1",model_instance="0",state="computing"} 9
coalesce_instance_diagnosis_info{model="m",version="1",model_instance="0",reason="low_load",detail="queue \"empty\" 70% of the time"} 1
coalesce_instance_diagnosis_info{model="other",version="1",model_instance="0",reason="ok",detail="x"} 1
)";

TEST(MetricsScrapeTest, ParsesTheStatesOfOneModelSummingVersions) {
  const std::map<int, StateSeconds> states = ParseInstanceStates(kScrape, "m");
  ASSERT_EQ(states.size(), 2u);
  EXPECT_THAT(states.at(0), ElementsAre(4, 0, 0, 0, 0, 1));
  EXPECT_THAT(states.at(1), ElementsAre(0, 0.5, 0, 0, 0, 0));
}

TEST(MetricsScrapeTest, ParsesDiagnosesWithEscapedQuotes) {
  const std::vector<InstanceDiagnosisText> d = ParseDiagnoses(kScrape, "m");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].instance, 0);
  EXPECT_EQ(d[0].reason, "low_load");
  EXPECT_EQ(d[0].detail, "queue \"empty\" 70% of the time");
}

TEST(MetricsScrapeTest, SplitLinesShowTheGrowthInPercent) {
  std::map<int, StateSeconds> before = {{0, {1, 0, 0, 0, 0, 1}}};
  std::map<int, StateSeconds> after = {{0, {4, 0.5, 0.5, 0, 0, 2}},
                                       {1, {0, 0, 0, 0, 0, 0}}};
  EXPECT_THAT(StateSplitLines(before, after),
              ElementsAre("instance 0: computing 60% | copying_in 10% | "
                          "copying_out 10% | blocked_pipeline 0% | "
                          "idle_assembling 0% | idle_empty_queue 20%"));
}

}  // namespace
}  // namespace coalesce::bench
