#include "benchmarks/coalesce_bench/report.h"

#include "benchmarks/coalesce_bench/svg_plot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coalesce::bench {
namespace {

LevelReport Level(int concurrency, double rps, int64_t p50_ns) {
  LevelReport level;
  level.mode = LoadMode::kClosedLoop;
  level.concurrency = concurrency;
  level.result.summary.throughput_rps = rps;
  level.result.summary.successes = 100;
  level.result.summary.latency.count = 100;
  level.result.summary.latency.p50_ns = p50_ns;
  level.result.summary.latency.p99_ns = 2 * p50_ns;
  level.result.summary.errors[14] = 2;
  level.result.summary.error_count = 2;
  level.result.windows.resize(3);
  level.result.stable = true;
  return level;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportTest, GrpcCodeNames) {
  EXPECT_EQ(GrpcCodeName(5), "NOT_FOUND");
  EXPECT_EQ(GrpcCodeName(14), "UNAVAILABLE");
}

TEST(ReportTest, CsvHasAHeaderAndOneRowPerLevel) {
  RunInfo run;
  run.batch_size = 4;
  const std::string csv =
      CsvText(run, {Level(1, 100, 2'000'000), Level(4, 250, 5'000'000)});
  EXPECT_EQ(Count(csv, "\n"), 3u);
  EXPECT_NE(csv.find("closed,1,,,4,400.000,100.000,2.0000"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("UNAVAILABLE=2"), std::string::npos);
}

TEST(ReportTest, JsonHasEveryLevel) {
  RunInfo run;
  run.model = "m\"q";
  const std::string text =
      JsonText(run, {Level(1, 100, 2'000'000), Level(4, 250, 5'000'000)});
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["model"], "m\"q");
  EXPECT_EQ(json["mode"], "closed");
  EXPECT_TRUE(json["arrival"].is_null());
  ASSERT_EQ(json["levels"].size(), 2u);
  EXPECT_EQ(json["levels"][0]["concurrency"], 1);
  EXPECT_EQ(json["levels"][1]["concurrency"], 4);
  EXPECT_TRUE(json["levels"][0]["request_rate"].is_null());
  const nlohmann::json& summary = json["levels"][0]["summary"];
  EXPECT_EQ(summary["errors"]["UNAVAILABLE"], 2);
  EXPECT_TRUE(summary["server"].is_null());
  EXPECT_DOUBLE_EQ(summary["latency_ms"]["p50"].get<double>(), 2.0) << text;
}

TEST(ReportTest, HeaderAndJsonNameThePaddingMaskAndItsFill) {
  RunInfo run;
  EXPECT_EQ(RequestsHeader(run), "");
  EXPECT_TRUE(
      nlohmann::json::parse(JsonText(run, {}))["padding_mask"].is_null());
  run.request_variants = 8;
  EXPECT_EQ(RequestsHeader(run),
            "# 8 request variants (inputs from successive seeds), sent "
            "round-robin\n");
  run.request_variants = 64;
  run.padding_mask = "attention_mask=uniform:8";
  run.mask_seq_len = 16;
  run.mask_min_length = 8;
  run.mask_max_length = 16;
  run.mask_mean_fill = 0.7539;
  EXPECT_EQ(RequestsHeader(run),
            "# padding mask attention_mask=uniform:8: L in [8, 16] of S=16 "
            "per row, mean fill 0.754 (mean L / S over 64 request variants, "
            "sent round-robin)\n");
  const nlohmann::json json = nlohmann::json::parse(JsonText(run, {}));
  EXPECT_EQ(json["request_variants"], 64);
  EXPECT_EQ(json["padding_mask"]["flag"], "attention_mask=uniform:8");
  EXPECT_EQ(json["padding_mask"]["seq_len"], 16);
  EXPECT_DOUBLE_EQ(json["padding_mask"]["mean_fill"].get<double>(), 0.7539);
}

TEST(ReportTest, WarningsForErrorsAndClientSaturation) {
  RunInfo run;
  run.cores = 2;
  LevelReport level = Level(8, 100, 1'000'000);
  level.result.summary.client_cpu_cores = 1.9;
  const std::vector<std::string> w = LevelWarnings(run, level);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("1.90 of 2 cores"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("2 requests failed: UNAVAILABLE=2"), std::string::npos)
      << w[1];
}

TEST(SvgPlotTest, NiceSteps) {
  EXPECT_DOUBLE_EQ(NiceStep(1000, 5), 200);
  EXPECT_DOUBLE_EQ(NiceStep(7.3, 5), 2);
  EXPECT_DOUBLE_EQ(NiceStep(0.9, 5), 0.2);
  EXPECT_DOUBLE_EQ(NiceStep(26, 5), 10);
}

TEST(SvgPlotTest, TwoSeriesWithOneMarkPerPoint) {
  const std::string svg = RenderLatencySvg(
      {{100, 1, 2, "c=1"}, {300, 2, 5, "c=4"}, {350, 6, 12, "c=8"}},
      "m <test>");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_EQ(Count(svg, "<circle"), 6u);
  EXPECT_NE(svg.find("m &lt;test&gt;"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace coalesce::bench
