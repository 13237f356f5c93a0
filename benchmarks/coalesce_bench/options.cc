#include "benchmarks/coalesce_bench/options.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/command_line.h"
#include "benchmarks/coalesce_bench/usage.h"

namespace coalesce::bench {
namespace {

constexpr int kMaxLevels = 1000;   // keeps a sweep (and its loop) bounded
constexpr int kMaskVariants = 64;  // --request-variants with --padding-mask

absl::Status FlagError(absl::string_view flag, absl::string_view what,
                       absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " ", what, ", got '", text, "'"));
}

absl::StatusOr<int64_t> ParseInt(absl::string_view flag, absl::string_view text,
                                 int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      value < min || value > max) {
    return FlagError(
        flag, absl::StrCat("needs an integer in [", min, ", ", max, "]"), text);
  }
  return value;
}

absl::StatusOr<double> ParseDouble(absl::string_view flag,
                                   absl::string_view text, double min,
                                   double max) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value < min ||
      value > max) {
    return FlagError(
        flag, absl::StrCat("needs a number in [", min, ", ", max, "]"), text);
  }
  return value;
}

absl::StatusOr<std::chrono::milliseconds> ParseMs(absl::string_view flag,
                                                  absl::string_view text,
                                                  int64_t min) {
  auto ms = ParseInt(flag, text, min, int64_t{24} * 3600 * 1000);
  if (!ms.ok()) return ms.status();
  return std::chrono::milliseconds(*ms);
}

// Stores what `parse` makes of the flag's value in `field`.
template <typename Parse, typename Field>
std::function<absl::Status(const std::string&)> Into(Parse parse,
                                                     Field& field) {
  return [parse, &field](const std::string& v) -> absl::Status {
    auto value = parse(v);
    if (!value.ok()) return value.status();
    field = *value;
    return absl::OkStatus();
  };
}

absl::Status SetArrival(BenchOptions& o, absl::string_view v) {
  if (v == "poisson") {
    o.arrival = ArrivalKind::kPoisson;
  } else if (v == "constant") {
    o.arrival = ArrivalKind::kConstant;
  } else if (v == "bursty") {
    o.arrival = ArrivalKind::kBursty;
  } else if (v == "step") {
    o.arrival = ArrivalKind::kStep;
  } else if (v == "ramp") {
    o.arrival = ArrivalKind::kRamp;
  } else {
    return FlagError("arrival",
                     "must be poisson, constant, bursty, step or ramp", v);
  }
  return absl::OkStatus();
}

absl::Status SetShape(BenchOptions& o, absl::string_view v) {
  auto shape = ParseShapeFlag(v);
  if (!shape.ok()) return shape.status();
  if (!o.shapes.emplace(shape->first, shape->second).second) {
    return FlagError("shape", "was given twice for the same input", v);
  }
  return absl::OkStatus();
}

absl::Status SetBatchSize(BenchOptions& o, absl::string_view v) {
  auto b = ParseInt("batch-size", v, 1, 1 << 20);
  if (!b.ok()) return b.status();
  o.batch_size = *b;
  o.batch_size_set = true;
  return absl::OkStatus();
}

// Parsers of integer and duration flags, for Into.
auto IntIn(const char* flag, int64_t min, int64_t max) {
  return [flag, min, max](absl::string_view v) {
    return ParseInt(flag, v, min, max);
  };
}
auto MsAtLeast(const char* flag, int64_t min) {
  return [flag, min](absl::string_view v) { return ParseMs(flag, v, min); };
}

using Apply = std::function<absl::Status(const std::string&)>;

// A flag of `group` whose value `apply` checks and stores.
CLI::Option* Add(CLI::App& app, const char* group, const std::string& name,
                 Apply apply, const std::string& type,
                 const std::string& help) {
  return AddOptionWith(app, name, std::move(apply), help)
      ->group(group)
      ->type_name(type);
}

void AddTargetFlags(CLI::App& app, BenchOptions& o) {
  app.add_option("-m,--model", o.model, "Model to benchmark (required).")
      ->group("TARGET")
      ->type_name("NAME");
  app.add_option("--model-version", o.model_version,
                 "Version (default: the server's latest).")
      ->group("TARGET")
      ->type_name("N");
  app.add_option("-i,--protocol", o.protocol,
                 "grpc (ModelInfer) or http (KServe v2 REST, binary tensor "
                 "data, as perf_analyzer sends it).")
      ->check(CLI::IsMember({"grpc", "http"}).description(""))
      ->group("TARGET")
      ->type_name("grpc|http")
      ->default_str("grpc");
  app.add_option("-u,--url", o.url,
                 "Server address (default 127.0.0.1:8001, with -i http "
                 "127.0.0.1:8000).")
      ->group("TARGET")
      ->type_name("HOST:PORT");
  Add(app, "TARGET", "--timeout",
      Into(MsAtLeast("timeout", 1), o.request_timeout), "MS",
      "Per-request deadline (default 30000).");
}

void AddLoadFlags(CLI::App& app, BenchOptions& o) {
  const char* kLoad = "LOAD";
  Add(app, kLoad, "--concurrency-range",
      Into(
          [](absl::string_view v) {
            return ParseIntRange("concurrency-range", v);
          },
          o.concurrencies),
      "START[:END[:STEP]]", "Closed loop levels (default 1; STEP default 1).");
  Add(app, kLoad, "--request-rate-range",
      Into(
          [](absl::string_view v) {
            return ParseRateRange("request-rate-range", v);
          },
          o.request_rates),
      "START[:END:STEP]",
      "Open loop levels, requests/s (each request carries --batch-size "
      "rows).");
  Add(
      app, kLoad, "--arrival",
      [&o](const std::string& v) { return SetArrival(o, v); },
      "poisson|constant|bursty|step|ramp",
      "Open loop arrival process (default poisson). step and ramp: Poisson "
      "at a rate that changes over each --cycle-ms, between "
      "--low-fraction of the level's rate and the level's rate.");
  Add(app, kLoad, "--burst-on-ms",
      Into(MsAtLeast("burst-on-ms", 1), o.burst_on), "MS",
      "Bursty: length of a burst (default 100).");
  Add(app, kLoad, "--burst-off-ms",
      Into(MsAtLeast("burst-off-ms", 1), o.burst_off), "MS",
      "Bursty: silence between bursts (default 100); the rate inside a burst "
      "is raised so that the mean rate over on+off is the target rate.");
  Add(
      app, kLoad, "--low-fraction",
      [&o](const std::string& v) -> absl::Status {
        double f = 0;
        if (!absl::SimpleAtod(v, &f) || !(f > 0) || f > 1) {
          return FlagError("low-fraction", "must be in (0, 1]", v);
        }
        o.low_fraction = f;
        return absl::OkStatus();
      },
      "F",
      "Step and ramp: the low rate as a fraction of the level's (default "
      "0.1).");
  Add(app, kLoad, "--cycle-ms", Into(MsAtLeast("cycle-ms", 2), o.cycle), "MS",
      "Step: half a cycle at the low rate, then half at the level's; ramp: "
      "up from the low rate to the level's over half a cycle and back down "
      "(default 4000).");
  Add(app, kLoad, "--max-inflight",
      Into(IntIn("max-inflight", 1, 1000000), o.max_inflight), "N",
      "Open loop: at most N requests outstanding; a send that has to wait "
      "still counts its delay (default 1000).");
  Add(app, kLoad, "--channels", Into(IntIn("channels", 1, 256), o.channels),
      "N",
      "gRPC channels (connections), requests spread round-robin "
      "(default 4).");
  app.add_flag("--streaming", o.streaming,
               "Send over ModelStreamInfer (the bidirectional stream) instead "
               "of ModelInfer: one stream per closed-loop request slot, or per "
               "channel in open loop, each kept open between requests; "
               "responses matched by request id. A stream error has no gRPC "
               "code and counts as UNKNOWN.")
      ->group(kLoad);
  Add(app, kLoad, "--seed", Into(IntIn("seed", 0, INT64_MAX), o.seed), "N",
      "Seed of random inputs and arrivals (default 1).");
}

void AddMeasurementFlags(CLI::App& app, BenchOptions& o) {
  const char* kMeasure = "MEASUREMENT FLAGS";
  Add(app, kMeasure, "--warmup-ms", Into(MsAtLeast("warmup-ms", 0), o.warmup),
      "MS", "Warm-up per level (default 500).");
  Add(app, kMeasure, "--warmup-requests",
      Into(IntIn("warmup-requests", 0, 1 << 30), o.warmup_requests), "N",
      "Warm up until N requests completed instead.");
  Add(app, kMeasure, "--window-ms", Into(MsAtLeast("window-ms", 10), o.window),
      "MS", "Measurement window (default 2000).");
  Add(app, kMeasure, "--stability-percent",
      Into(
          [](absl::string_view v) {
            return ParseDouble("stability-percent", v, 0.1, 1000);
          },
          o.stability_percent),
      "P", "Stability tolerance in % (default 10).");
  Add(app, kMeasure, "--max-windows",
      Into(IntIn("max-windows", 1, 1000), o.max_windows), "N",
      "Windows per level at most (default 10).");
}

void AddInputAndOutputFlags(CLI::App& app, BenchOptions& o) {
  Add(
      app, "INPUTS", "--batch-size",
      [&o](const std::string& v) { return SetBatchSize(o, v); }, "N",
      "First dimension, for models whose config has max_batch_size > 0 "
      "(default 1).");
  AddOptionWith(
      app, "--shape", [&o](const std::string& v) { return SetShape(o, v); },
      "Dims of an input with variable (-1) dims, without the batch dimension "
      "when the model batches; repeat per input.",
      /*repeatable=*/true)
      ->group("INPUTS")
      ->type_name("NAME:D1,D2,...");
  app.add_option("--input-data", o.input_data_dir,
                 "Read each input from DIR/<input name>: raw little-endian "
                 "row-major bytes (BYTES: 4-byte length + bytes per element), "
                 "exactly the resolved shape.")
      ->group("INPUTS")
      ->type_name("DIR");
  Add(
      app, "INPUTS", "--padding-mask",
      [&o](const std::string& v) -> absl::Status {
        auto flag = ParsePaddingMaskFlag(v);
        if (!flag.ok()) return flag.status();
        o.padding_mask = *std::move(flag);
        return absl::OkStatus();
      },
      "NAME=DIST",
      "Fill input NAME as a padding mask: its last dimension is the sequence "
      "length S, and each row (each batch entry and leading index) gets its "
      "own length L: 1 (true, 1.0) before L, 0 after. DIST: uniform:MIN (L "
      "uniform on [MIN, S]), uniform:MIN:MAX (MAX <= S), or file:PATH (one "
      "length per line, used in order and cycled). NAME is generated even "
      "with --input-data. Any integer, float or BOOL input.");
  Add(app, "INPUTS", "--request-variants",
      Into(IntIn("request-variants", 1, 100000), o.request_variants), "N",
      "Prebuild N different requests (random inputs from successive seeds, "
      "or the --input-data files; each with its own padding mask) and send "
      "them round-robin (default 64 with --padding-mask, else 1).");
  app.add_option("--output", o.output_prefix,
                 "Also write PREFIX.csv and PREFIX.json.")
      ->group("OUTPUT")
      ->type_name("PREFIX");
  app.add_option("--plot", o.plot_path,
                 "Write an SVG plot of p50 and p99 latency against throughput.")
      ->group("OUTPUT")
      ->type_name("FILE.svg");
  app.add_option("--metrics-url", o.metrics_url,
                 "coalesce-server's metrics endpoint (http://HOST:8002/metrics)"
                 ": after each level, print where each model instance's time "
                 "went (computing, copying, blocked, idle); at the end, the "
                 "server's idle diagnosis.")
      ->group("OUTPUT")
      ->type_name("URL");
  // Declared again, last, so that its group comes last in --help.
  app.set_help_flag();
  app.set_help_flag("-h,--help", "Print this text and exit.")->group("OUTPUT");
}

// The flags (base/command_line.h), writing into `o`; the text around them
// comes from usage.h.
std::unique_ptr<CLI::App> BenchCommandLine(BenchOptions& o) {
  auto app = MakeCommandLine(BenchUsageIntro());
  app->footer(BenchUsageFooter());
  AddTargetFlags(*app, o);
  AddLoadFlags(*app, o);
  AddMeasurementFlags(*app, o);
  AddInputAndOutputFlags(*app, o);
  return app;
}

// Cross-flag checks once every flag is read.
absl::Status Validate(BenchOptions& o, bool has_concurrency, bool has_rate,
                      bool has_variants) {
  if (o.model.empty()) {
    return absl::InvalidArgumentError("-m/--model is required");
  }
  if (has_concurrency && has_rate) {
    return absl::InvalidArgumentError(
        "--concurrency-range (closed loop) and --request-rate-range (open "
        "loop) exclude each other");
  }
  o.mode = has_rate ? LoadMode::kOpenLoop : LoadMode::kClosedLoop;
  if (!has_variants && o.padding_mask.has_value()) {
    o.request_variants = kMaskVariants;
  }
  if (o.model_version.find_first_not_of("0123456789") != std::string::npos) {
    return FlagError("model-version", "needs a version number",
                     o.model_version);
  }
  if (o.protocol == "http" && o.streaming) {
    return absl::InvalidArgumentError(
        "--streaming is gRPC's ModelStreamInfer: not with -i http");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseIntRange(absl::string_view flag,
                                               absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() > 3) {
    return FlagError(flag, "needs start[:end[:step]]", text);
  }
  std::vector<int64_t> v;
  for (absl::string_view p : parts) {
    auto n = ParseInt(flag, p, 1, 1000000);
    if (!n.ok()) return n.status();
    v.push_back(*n);
  }
  const int64_t start = v[0];
  const int64_t end = v.size() > 1 ? v[1] : start;
  const int64_t step = v.size() > 2 ? v[2] : 1;
  if (end < start) return FlagError(flag, "needs start <= end", text);
  if ((end - start) / step + 1 > kMaxLevels) {
    return FlagError(
        flag, absl::StrCat("gives more than ", kMaxLevels, " levels"), text);
  }
  std::vector<int> out;
  for (int64_t c = start; c <= end; c += step)
    out.push_back(static_cast<int>(c));
  return out;
}

absl::StatusOr<std::vector<double>> ParseRateRange(absl::string_view flag,
                                                   absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() == 2 || parts.size() > 3) {
    return FlagError(flag, "needs start or start:end:step", text);
  }
  std::vector<double> v;
  for (absl::string_view p : parts) {
    auto n = ParseDouble(flag, p, 1e-3, 1e7);
    if (!n.ok()) return n.status();
    v.push_back(*n);
  }
  if (v.size() == 1) return v;
  const double start = v[0], end = v[1], step = v[2];
  if (end < start) return FlagError(flag, "needs start <= end", text);
  const double levels = std::floor((end - start) / step + 1e-9) + 1;
  if (levels > kMaxLevels) {
    return FlagError(
        flag, absl::StrCat("gives more than ", kMaxLevels, " levels"), text);
  }
  std::vector<double> out;
  for (int i = 0; i < static_cast<int>(levels); ++i) {
    out.push_back(start + i * step);
  }
  return out;
}

absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseShapeFlag(
    absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 ||
      colon + 1 == text.size()) {
    return FlagError("shape", "needs NAME:d1,d2,...", text);
  }
  std::vector<int64_t> dims;
  for (absl::string_view d : absl::StrSplit(text.substr(colon + 1), ',')) {
    auto n = ParseInt("shape", d, 1, int64_t{1} << 31);
    if (!n.ok()) return n.status();
    dims.push_back(*n);
  }
  return std::make_pair(std::string(text.substr(0, colon)), dims);
}

absl::string_view ArrivalName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kConstant:
      return "constant";
    case ArrivalKind::kBursty:
      return "bursty";
    case ArrivalKind::kStep:
      return "step";
    case ArrivalKind::kRamp:
      return "ramp";
  }
  return "?";
}

std::string BenchUsage() {
  BenchOptions defaults;
  return CommandLineUsage(*BenchCommandLine(defaults));
}

absl::StatusOr<BenchOptions> ParseBenchFlags(int argc,
                                             const char* const* argv) {
  BenchOptions options;
  auto app = BenchCommandLine(options);
  absl::Status s = ParseCommandLine(*app, argc, argv, &options.show_help);
  if (!s.ok()) return s;
  if (options.show_help) return options;
  if (options.protocol == "http" && app->count("--url") == 0) {
    options.url = "127.0.0.1:8000";
  }
  if (absl::Status v = Validate(options, app->count("--concurrency-range") > 0,
                                app->count("--request-rate-range") > 0,
                                app->count("--request-variants") > 0);
      !v.ok()) {
    return v;
  }
  return options;
}

}  // namespace coalesce::bench
