#include "benchmarks/coalesce_bench/options.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

absl::StatusOr<BenchOptions> Parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv = {"coalesce-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return ParseBenchFlags(static_cast<int>(argv.size()), argv.data());
}

// The parse fails with InvalidArgument and a message containing `needle`.
void ExpectError(std::initializer_list<const char*> args,
                 const std::string& needle) {
  auto o = Parse(args);
  ASSERT_FALSE(o.ok()) << "parsed although " << needle << " expected";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(o.status().message()).find(needle), std::string::npos)
      << o.status().message();
}

TEST(OptionsTest, DefaultsAreAClosedLoopAtConcurrencyOne) {
  auto o = Parse({"-m", "mlp"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->model, "mlp");
  EXPECT_EQ(o->mode, LoadMode::kClosedLoop);
  EXPECT_EQ(o->concurrencies, std::vector<int>{1});
  EXPECT_EQ(o->stability_percent, 10);
  EXPECT_EQ(o->url, "127.0.0.1:8001");
  EXPECT_FALSE(o->streaming);
  EXPECT_FALSE(o->padding_mask.has_value());
  EXPECT_EQ(o->request_variants, 1);
}

TEST(OptionsTest, StepAndRampArrivals) {
  auto o = Parse({"-m", "m", "--request-rate-range", "100", "--arrival", "ramp",
                  "--low-fraction", "0.25", "--cycle-ms", "6000"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->arrival, ArrivalKind::kRamp);
  EXPECT_EQ(o->low_fraction, 0.25);
  EXPECT_EQ(o->cycle, std::chrono::milliseconds(6000));
  auto step =
      Parse({"-m", "m", "--request-rate-range", "100", "--arrival", "step"});
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->arrival, ArrivalKind::kStep);
  EXPECT_EQ(step->low_fraction, 0.1);
  EXPECT_EQ(step->cycle, std::chrono::milliseconds(4000));
}

TEST(OptionsTest, PaddingMaskDefaultsTo64Variants) {
  auto o = Parse({"-m", "bert", "--padding-mask", "attention_mask=uniform:8"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(o->padding_mask.has_value());
  EXPECT_EQ(o->padding_mask->input, "attention_mask");
  EXPECT_EQ(o->padding_mask->kind, PaddingMaskFlag::Kind::kUniform);
  EXPECT_EQ(o->padding_mask->min, 8);
  EXPECT_EQ(o->padding_mask->max, 0);
  EXPECT_EQ(o->request_variants, 64);
  auto one = Parse({"-m", "bert", "--padding-mask=attention_mask=uniform:8",
                    "--request-variants", "1"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->request_variants, 1);
  auto plain = Parse({"-m", "mlp", "--request-variants", "100000"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->request_variants, 100000);
}

TEST(OptionsTest, EveryFlagIsRead) {
  auto o = Parse({"--model=m",
                  "-u",
                  "h:1",
                  "--model-version",
                  "3",
                  "--timeout",
                  "500",
                  "--request-rate-range",
                  "10:30:10",
                  "--arrival",
                  "bursty",
                  "--burst-on-ms",
                  "20",
                  "--burst-off-ms=80",
                  "--max-inflight",
                  "7",
                  "--channels",
                  "3",
                  "--streaming",
                  "--seed",
                  "9",
                  "--warmup-ms",
                  "0",
                  "--warmup-requests",
                  "5",
                  "--window-ms",
                  "300",
                  "--stability-percent",
                  "2.5",
                  "--max-windows",
                  "4",
                  "--batch-size",
                  "8",
                  "--shape",
                  "x:3,4",
                  "--input-data",
                  "d",
                  "--padding-mask",
                  "attention_mask=uniform:3:9",
                  "--request-variants",
                  "5",
                  "--output",
                  "p",
                  "--plot",
                  "f.svg"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->mode, LoadMode::kOpenLoop);
  EXPECT_EQ(o->request_rates, (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(o->arrival, ArrivalKind::kBursty);
  EXPECT_EQ(o->burst_on.count(), 20);
  EXPECT_EQ(o->burst_off.count(), 80);
  EXPECT_EQ(o->max_inflight, 7);
  EXPECT_EQ(o->channels, 3);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_EQ(o->request_timeout.count(), 500);
  EXPECT_EQ(o->warmup_requests, 5);
  EXPECT_EQ(o->window.count(), 300);
  EXPECT_EQ(o->stability_percent, 2.5);
  EXPECT_EQ(o->max_windows, 4);
  EXPECT_EQ(o->batch_size, 8);
  EXPECT_TRUE(o->batch_size_set);
  EXPECT_EQ(o->shapes.at("x"), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(o->model_version, "3");
  EXPECT_EQ(o->url, "h:1");
  EXPECT_EQ(o->input_data_dir, "d");
  ASSERT_TRUE(o->padding_mask.has_value());
  EXPECT_EQ(o->padding_mask->input, "attention_mask");
  EXPECT_EQ(o->padding_mask->min, 3);
  EXPECT_EQ(o->padding_mask->max, 9);
  EXPECT_EQ(o->request_variants, 5);
  EXPECT_EQ(o->output_prefix, "p");
  EXPECT_EQ(o->plot_path, "f.svg");
  EXPECT_TRUE(o->streaming);
}

TEST(OptionsTest, ConcurrencyRange) {
  auto o = Parse({"-m", "m", "--concurrency-range", "1:10:3"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->concurrencies, (std::vector<int>{1, 4, 7, 10}));
  EXPECT_EQ(*ParseIntRange("c", "2:4"), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(*ParseIntRange("c", "5"), (std::vector<int>{5}));
}

TEST(OptionsTest, HelpNeedsNothingElse) {
  auto o = Parse({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->show_help);
  EXPECT_NE(BenchUsage().find("--request-rate-range"), std::string::npos);
  EXPECT_NE(BenchUsage().find("--padding-mask"), std::string::npos);
  EXPECT_NE(BenchUsage().find("--request-variants"), std::string::npos);
}

TEST(OptionsTest, Errors) {
  ExpectError({}, "--model is required");
  ExpectError({"-m", "m", "--bogus", "1"}, "--bogus");
  ExpectError({"-m", "m", "positional"}, "positional");
  ExpectError({"-m", "m", "--window-ms"}, "--window-ms");
  ExpectError({"-m", "m", "--concurrency-range", "4:1"}, "start <= end");
  ExpectError({"-m", "m", "--concurrency-range", "0"}, "--concurrency-range");
  ExpectError({"-m", "m", "--concurrency-range", "1:4:0"}, "integer");
  ExpectError({"-m", "m", "--concurrency-range", "1:2:3:4"},
              "start[:end[:step]]");
  ExpectError({"-m", "m", "--request-rate-range", "10:20"}, "start:end:step");
  ExpectError({"-m", "m", "--request-rate-range", "-5"},
              "--request-rate-range");
  ExpectError(
      {"-m", "m", "--concurrency-range", "2", "--request-rate-range", "10"},
      "exclude each other");
  ExpectError({"-m", "m", "--arrival", "uniform"},
              "poisson, constant, bursty, step or ramp");
  ExpectError({"-m", "m", "--low-fraction", "0"}, "--low-fraction");
  ExpectError({"-m", "m", "--low-fraction", "1.5"}, "--low-fraction");
  ExpectError({"-m", "m", "--cycle-ms", "1"}, "--cycle-ms");
  ExpectError({"-m", "m", "--burst-on-ms", "0"}, "--burst-on-ms");
  ExpectError({"-m", "m", "--shape", "x"}, "NAME:d1,d2");
  ExpectError({"-m", "m", "--shape", "x:3,-1"}, "--shape");
  ExpectError({"-m", "m", "--shape", "x:3", "--shape", "x:4"}, "twice");
  ExpectError({"-m", "m", "--batch-size", "0"}, "--batch-size");
  ExpectError({"-m", "m", "--timeout", "abc"}, "--timeout");
  ExpectError({"-m", "m", "--stability-percent", "nan"}, "--stability-percent");
  ExpectError({"-m", "m", "--channels", "1000"}, "--channels");
  ExpectError({"-m", "m", "--model-version", "v2"}, "--model-version");
  ExpectError({"-m", "m", "--concurrency-range", "1:5000"}, "more than");
  ExpectError({"-m", "m", "--request-variants", "0"}, "--request-variants");
  ExpectError({"-m", "m", "--request-variants", "100001"},
              "--request-variants needs an integer in [1, 100000]");
  ExpectError({"-m", "m", "--padding-mask", "attention_mask"},
              "--padding-mask needs NAME=DIST");
  ExpectError({"-m", "m", "--padding-mask", "a=uniform:0"}, "--padding-mask");
  ExpectError({"-m", "m", "--padding-mask", "a=uniform:9:2"}, "MIN <= MAX");
  ExpectError({"-m", "m", "--padding-mask", "a=zipf:2"}, "file:PATH");
  ExpectError({"-m", "m", "--padding-mask", "a=file:/nonexistent/lengths"},
              "--padding-mask cannot read lengths file");
}

TEST(OptionsTest, ShapeFlagKeepsColonsInTheName) {
  auto s = ParseShapeFlag("ns:input:2,3");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->first, "ns:input");
  EXPECT_EQ(s->second, (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace coalesce::bench
