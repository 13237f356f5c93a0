// BenchOptions: everything coalesce-bench is told on its command line, and
// ParseBenchFlags, which builds and validates it. Plain value types; parsing
// never throws and reports the first bad flag as InvalidArgument.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_OPTIONS_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/coalesce_bench/padding_mask.h"

namespace coalesce::bench {

enum class LoadMode {
  kClosedLoop,  // a fixed number of requests in flight (--concurrency-range)
  kOpenLoop,    // requests sent on a schedule (--request-rate-range)
};

enum class ArrivalKind {
  kPoisson,   // exponential gaps: independent arrivals at a mean rate
  kConstant,  // exactly 1/rate apart
  kBursty,    // Poisson while "on", nothing while "off"; same mean rate
  kStep,      // Poisson, low rate for half a cycle, then the level's rate
  kRamp,      // Poisson, from the low rate up to the level's and back
};

struct BenchOptions {
  // Target.
  std::string model;
  std::string model_version;  // empty: the server's latest ready version
  // -i: "grpc" (ModelInfer, the default) or "http" (KServe v2 REST with
  // binary tensor data, as perf_analyzer's default).
  std::string protocol = "grpc";
  std::string url = "127.0.0.1:8001";  // default 127.0.0.1:8000 with http
  std::chrono::milliseconds request_timeout{30000};  // per-request deadline

  // Load.
  LoadMode mode = LoadMode::kClosedLoop;
  std::vector<int> concurrencies = {1};  // closed loop, one level each
  std::vector<double> request_rates;     // open loop, requests/s
  ArrivalKind arrival = ArrivalKind::kPoisson;
  std::chrono::milliseconds burst_on{100};   // bursty: length of an on period
  std::chrono::milliseconds burst_off{100};  // bursty: length of an off period
  double low_fraction = 0.1;                 // step/ramp: low rate / level's
  std::chrono::milliseconds cycle{4000};     // step/ramp: one low-high cycle
  int max_inflight = 1000;  // open loop: sends wait (and the wait counts)
  int channels = 4;         // gRPC channels, requests spread round-robin
  bool streaming = false;   // ModelStreamInfer, one stream per lane
  uint64_t seed = 1;        // input data and arrival schedules

  // Measurement.
  std::chrono::milliseconds warmup{500};  // per load level, results dropped
  int64_t warmup_requests = 0;            // > 0: warm up by count instead
  std::chrono::milliseconds window{2000};
  double stability_percent = 10.0;
  int max_windows = 10;

  // Inputs.
  int64_t batch_size = 1;
  bool batch_size_set = false;  // --batch-size given explicitly
  // --shape NAME:d1,d2,...: dims of an input (without the batch dimension
  // when the model batches).
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string input_data_dir;  // empty: random data
  // --padding-mask NAME=DIST: NAME filled as a padding mask whose lengths
  // follow DIST (padding_mask.h); the file of file:PATH is read at parsing.
  std::optional<PaddingMaskFlag> padding_mask;
  // --request-variants: how many different requests are prebuilt and sent
  // round-robin (request_pool.h). Default 64 with --padding-mask, else 1.
  int request_variants = 1;

  // Output.
  std::string output_prefix;  // PREFIX.csv and PREFIX.json when set
  std::string plot_path;      // SVG latency vs throughput when set
  std::string metrics_url;    // coalesce-server's /metrics when set

  bool show_help = false;
};

// Parses argv (argv[0] is the program name). InvalidArgument naming the flag
// on any error; a complete, validated BenchOptions otherwise.
absl::StatusOr<BenchOptions> ParseBenchFlags(int argc, const char* const* argv);

// "start[:end[:step]]" of positive integers, start <= end, step >= 1.
absl::StatusOr<std::vector<int>> ParseIntRange(absl::string_view flag,
                                               absl::string_view text);

// "start[:end[:step]]" of positive numbers, start <= end, step > 0. The last
// value is `end` itself when the steps land on it within rounding.
absl::StatusOr<std::vector<double>> ParseRateRange(absl::string_view flag,
                                                   absl::string_view text);

// "NAME:d1,d2,..." with dims >= 1.
absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseShapeFlag(
    absl::string_view text);

absl::string_view ArrivalName(ArrivalKind kind);

// The text printed for --help: every mode and flag, with examples.
std::string BenchUsage();

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_OPTIONS_H_
