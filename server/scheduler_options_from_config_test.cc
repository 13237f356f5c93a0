#include "server/scheduler_options_from_config.h"

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config));
  return config;
}

std::string WithTarget(const std::string& value, const std::string& rest) {
  return "name: \"m\" parameters { key: \"latency_target_p99_ms\" value { "
         "string_value: \"" +
         value + "\" } } " + rest;
}

TEST(LatencyTargetFromConfigTest, AbsentIsZero) {
  auto target = LatencyTargetFromConfig(
      Parse(R"(name: "m" max_batch_size: 8 dynamic_batching { })"));
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, Clock::Duration(0));
}

TEST(LatencyTargetFromConfigTest, MillisecondsWithAFraction) {
  auto target = LatencyTargetFromConfig(
      Parse(WithTarget("12.5", "max_batch_size: 8 dynamic_batching { }")));
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*target, std::chrono::microseconds(12500));
  // SchedulerOptions carry it.
  const SchedulerOptions options = SchedulerOptionsFromConfig(
      Parse(WithTarget("12.5", "max_batch_size: 8 dynamic_batching { }")),
      ModelSignature{}, RealClock());
  EXPECT_EQ(options.latency_target, std::chrono::microseconds(12500));
}

TEST(LatencyTargetFromConfigTest, BadValuesNameTheParameter) {
  for (const char* bad : {"", "fast", "0", "-5", "nan", "inf", "10ms"}) {
    auto target = LatencyTargetFromConfig(
        Parse(WithTarget(bad, "max_batch_size: 8 dynamic_batching { }")));
    ASSERT_FALSE(target.ok()) << bad;
    EXPECT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(target.status().message(),
                HasSubstr("parameter 'latency_target_p99_ms'"));
    EXPECT_THAT(target.status().message(),
                HasSubstr("positive number of milliseconds"));
  }
}

TEST(LatencyTargetFromConfigTest, NeedsDynamicBatching) {
  auto no_batch = LatencyTargetFromConfig(
      Parse(WithTarget("20", "max_batch_size: 0 dynamic_batching { }")));
  EXPECT_THAT(no_batch.status().message(), HasSubstr("max_batch_size >= 1"));
  auto no_dynamic =
      LatencyTargetFromConfig(Parse(WithTarget("20", "max_batch_size: 8")));
  EXPECT_THAT(no_dynamic.status().message(),
              HasSubstr("needs dynamic_batching { }"));
  auto sequence = LatencyTargetFromConfig(
      Parse(WithTarget("20", "max_batch_size: 8 sequence_batching { }")));
  EXPECT_THAT(sequence.status().message(), HasSubstr("sequence_batching"));
}

}  // namespace
}  // namespace coalesce
