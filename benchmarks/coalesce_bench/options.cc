#include "benchmarks/coalesce_bench/options.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coalesce::bench {
namespace {

constexpr int kMaxLevels = 1000;  // keeps a sweep (and its loop) bounded

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

using Setter = std::function<absl::Status(BenchOptions&, absl::string_view)>;

// Assigns the parsed value of `parse` to `field` of the options.
template <typename Parse, typename Field>
Setter Assign(Parse parse, Field field) {
  return [parse, field](BenchOptions& o, absl::string_view v) -> absl::Status {
    auto value = parse(v);
    if (!value.ok()) return value.status();
    o.*field = *value;
    return absl::OkStatus();
  };
}

Setter AssignString(std::string BenchOptions::*field) {
  return [field](BenchOptions& o, absl::string_view v) {
    o.*field = std::string(v);
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
  } else {
    return FlagError("arrival", "must be poisson, constant or bursty", v);
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

const std::map<std::string, Setter, std::less<>>& Setters() {
  using O = BenchOptions;
  static const auto* setters = new std::map<std::string, Setter, std::less<>>{
      {"model", AssignString(&O::model)},
      {"model-version", AssignString(&O::model_version)},
      {"url", AssignString(&O::url)},
      {"timeout", Assign([](auto v) { return ParseMs("timeout", v, 1); },
                         &O::request_timeout)},
      {"concurrency-range",
       Assign([](auto v) { return ParseIntRange("concurrency-range", v); },
              &O::concurrencies)},
      {"request-rate-range",
       Assign([](auto v) { return ParseRateRange("request-rate-range", v); },
              &O::request_rates)},
      {"arrival", SetArrival},
      {"burst-on-ms",
       Assign([](auto v) { return ParseMs("burst-on-ms", v, 1); },
              &O::burst_on)},
      {"burst-off-ms",
       Assign([](auto v) { return ParseMs("burst-off-ms", v, 1); },
              &O::burst_off)},
      {"max-inflight",
       Assign([](auto v) { return ParseInt("max-inflight", v, 1, 1000000); },
              &O::max_inflight)},
      {"channels",
       Assign([](auto v) { return ParseInt("channels", v, 1, 256); },
              &O::channels)},
      {"seed", Assign([](auto v) { return ParseInt("seed", v, 0, INT64_MAX); },
                      &O::seed)},
      {"warmup-ms",
       Assign([](auto v) { return ParseMs("warmup-ms", v, 0); }, &O::warmup)},
      {"warmup-requests",
       Assign([](auto v) { return ParseInt("warmup-requests", v, 0, 1 << 30); },
              &O::warmup_requests)},
      {"window-ms",
       Assign([](auto v) { return ParseMs("window-ms", v, 10); }, &O::window)},
      {"stability-percent", Assign(
                                [](auto v) {
                                  return ParseDouble("stability-percent", v,
                                                     0.1, 1000);
                                },
                                &O::stability_percent)},
      {"max-windows",
       Assign([](auto v) { return ParseInt("max-windows", v, 1, 1000); },
              &O::max_windows)},
      {"batch-size", SetBatchSize},
      {"shape", SetShape},
      {"input-data", AssignString(&O::input_data_dir)},
      {"output", AssignString(&O::output_prefix)},
      {"plot", AssignString(&O::plot_path)},
      {"metrics-url", AssignString(&O::metrics_url)},
  };
  return *setters;
}

// "-m" -> "model", "-u" -> "url"; "--name" -> "name"; anything else "".
std::string FlagName(absl::string_view arg) {
  if (arg == "-m") return "model";
  if (arg == "-u") return "url";
  if (arg.size() > 2 && arg.substr(0, 2) == "--") {
    return std::string(arg.substr(2));
  }
  return "";
}

// Cross-flag checks once every flag is read.
absl::Status Validate(BenchOptions& o, bool has_concurrency, bool has_rate) {
  if (o.model.empty()) {
    return absl::InvalidArgumentError("-m/--model is required");
  }
  if (has_concurrency && has_rate) {
    return absl::InvalidArgumentError(
        "--concurrency-range (closed loop) and --request-rate-range (open "
        "loop) exclude each other");
  }
  o.mode = has_rate ? LoadMode::kOpenLoop : LoadMode::kClosedLoop;
  if (o.model_version.find_first_not_of("0123456789") != std::string::npos) {
    return FlagError("model-version", "needs a version number",
                     o.model_version);
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
  }
  return "?";
}

absl::StatusOr<BenchOptions> ParseBenchFlags(int argc,
                                             const char* const* argv) {
  BenchOptions options;
  bool has_concurrency = false, has_rate = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      options.show_help = true;
      return options;
    }
    if (arg == "--streaming") {  // the one flag without a value
      options.streaming = true;
      continue;
    }
    std::string name = FlagName(arg);
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    auto it = Setters().find(name);
    if (name.empty() || it == Setters().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "' (see --help)"));
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value"));
      }
      value = argv[++i];
    }
    if (absl::Status s = it->second(options, value); !s.ok()) return s;
    has_concurrency |= name == "concurrency-range";
    has_rate |= name == "request-rate-range";
  }
  if (absl::Status s = Validate(options, has_concurrency, has_rate); !s.ok()) {
    return s;
  }
  return options;
}

}  // namespace coalesce::bench
