// coalesce-bench: a load generator for any KServe v2 gRPC inference server
// (Coalesce, Triton). Flags and modes: options.h and --help; what is
// measured: measurement.h; outputs: report.h, svg_plot.h.
//
// Exit codes: 0 success; 1 the run failed (unknown model, unreachable
// server, bad input data, every request failed, an output not written);
// 2 bad command line.
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/coalesce_bench/cpu_usage.h"
#include "benchmarks/coalesce_bench/grpc_infer_sender.h"
#include "benchmarks/coalesce_bench/grpc_stream_infer_sender.h"
#include "benchmarks/coalesce_bench/http_get.h"
#include "benchmarks/coalesce_bench/http_infer_sender.h"
#include "benchmarks/coalesce_bench/http_model_client.h"
#include "benchmarks/coalesce_bench/infer_request.h"
#include "benchmarks/coalesce_bench/metrics_scrape.h"
#include "benchmarks/coalesce_bench/model_client.h"
#include "benchmarks/coalesce_bench/options.h"
#include "benchmarks/coalesce_bench/progress.h"
#include "benchmarks/coalesce_bench/report.h"
#include "benchmarks/coalesce_bench/request_pool.h"
#include "benchmarks/coalesce_bench/svg_plot.h"
#include "benchmarks/coalesce_bench/sweep.h"

namespace coalesce::bench {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "coalesce-bench: error: %s\n",
               std::string(status.message()).c_str());
  return 1;
}

void Warn(const std::string& text) {
  std::fprintf(stderr, "coalesce-bench: %s\n", text.c_str());
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string ShapesText(const std::vector<TensorSpec>& inputs) {
  std::vector<std::string> parts;
  for (const TensorSpec& t : inputs) {
    parts.push_back(absl::StrCat(t.name, "=", t.datatype, "[",
                                 absl::StrJoin(t.shape, ","), "]"));
  }
  return absl::StrJoin(parts, " ");
}

std::string ProgressText(const BenchOptions& o, const LevelReport& level,
                         int window, const WindowResult& r) {
  return absl::StrFormat(
      "%s window %d/%d: %.1f infer/s, p50 %.3f ms, p99 %.3f ms, %d errors",
      level.mode == LoadMode::kClosedLoop
          ? absl::StrCat("concurrency ", level.concurrency)
          : absl::StrFormat("rate %.6g/s", level.request_rate),
      window + 1, o.max_windows,
      r.throughput_rps * static_cast<double>(o.batch_size),
      r.latency.p50_ns / 1e6, r.latency.p99_ns / 1e6, r.error_count);
}

absl::Status WriteOutputs(const BenchOptions& o, const RunInfo& run,
                          const std::vector<LevelReport>& levels) {
  if (!o.output_prefix.empty()) {
    absl::Status s = WriteFile(o.output_prefix + ".csv", CsvText(run, levels));
    if (s.ok()) s = WriteFile(o.output_prefix + ".json", JsonText(run, levels));
    if (!s.ok()) return s;
  }
  if (!o.plot_path.empty()) {
    std::vector<PlotPoint> points;
    for (const LevelReport& level : levels) {
      const WindowResult& w = level.result.summary;
      points.push_back({w.throughput_rps * static_cast<double>(o.batch_size),
                        w.latency.p50_ns / 1e6, w.latency.p99_ns / 1e6,
                        level.mode == LoadMode::kClosedLoop
                            ? absl::StrCat("c=", level.concurrency)
                            : absl::StrFormat("%.6g/s", level.request_rate)});
    }
    const std::string title = absl::StrCat(
        o.model, ": latency vs throughput (",
        o.mode == LoadMode::kClosedLoop ? "closed loop" : "open loop", ")");
    return WriteFile(o.plot_path, RenderLatencySvg(points, title));
  }
  return absl::OkStatus();
}

// The requests the benchmark sends round-robin, from the model's
// metadata/config; what they hold goes into *run for the report.
absl::StatusOr<std::shared_ptr<const RequestPool>> PrepareRequests(
    const BenchOptions& o, ModelControl& control, RunInfo* run) {
  absl::StatusOr<ModelInfo> info =
      control.GetModelInfo(o.model, o.model_version);
  if (!info.ok()) return info.status();
  if (!info->config_note.empty())
    Warn(absl::StrCat("note: ", info->config_note));
  ShapeRequest shapes{info->max_batch_size, o.batch_size, o.batch_size_set,
                      o.shapes};
  auto inputs = ResolveInputShapes(info->inputs, shapes);
  if (!inputs.ok()) return inputs.status();
  run->shapes = ShapesText(*inputs);
  run->batch_size = info->max_batch_size > 0 ? o.batch_size : 1;
  PoolContents contents;
  contents.request.model = o.model;
  contents.request.version = o.model_version;
  contents.request.inputs = *inputs;
  contents.request.input_data_dir = o.input_data_dir;
  contents.request.seed = o.seed;
  contents.variants = o.request_variants;
  contents.padding_mask = o.padding_mask;
  absl::StatusOr<BuiltPool> built = BuildRequestPool(contents);
  if (!built.ok()) return built.status();
  run->request_variants = static_cast<int>(built->pool->size());
  if (o.padding_mask.has_value()) {
    run->padding_mask = o.padding_mask->text;
    run->mask_seq_len = built->seq_len;
    run->mask_min_length = built->min_length;
    run->mask_max_length = built->max_length;
    run->mask_mean_fill = built->mean_fill;
  }
  return built->pool;
}

// The statistics source of the sweep, or null (with a note) when the server
// does not answer ModelStatistics for the model.
std::function<absl::StatusOr<ServerStatsSnapshot>()> ServerStatsSource(
    const BenchOptions& o, ModelControl* control) {
  absl::StatusOr<ServerStatsSnapshot> probe =
      control->GetStatistics(o.model, o.model_version);
  if (!probe.ok()) {
    Warn(
        absl::StrCat("note: no server-side split: ", probe.status().message()));
    return nullptr;
  }
  return [&o, control] {
    return control->GetStatistics(o.model, o.model_version);
  };
}

absl::StatusOr<std::unique_ptr<InferSender>> CreateSender(
    const BenchOptions& o, std::shared_ptr<const RequestPool> pool) {
  if (o.protocol == "http") {
    auto sender = HttpInferSender::Create(
        {o.url, o.model, o.model_version, o.request_timeout}, *pool);
    if (!sender.ok()) return sender.status();
    return std::unique_ptr<InferSender>(*std::move(sender));
  }
  if (o.streaming) {
    return std::make_unique<GrpcStreamInferSender>(
        GrpcStreamInferSender::Options{o.url, o.channels, o.request_timeout},
        std::move(pool));
  }
  return std::make_unique<GrpcInferSender>(
      GrpcInferSender::Options{o.url, o.channels, o.request_timeout},
      std::move(pool));
}

void PrintHeader(const BenchOptions& o, const RunInfo& run) {
  const std::string mode =
      o.mode == LoadMode::kClosedLoop
          ? "closed loop"
          : absl::StrCat("open loop (", ArrivalName(o.arrival), ")");
  const std::string transport =
      o.protocol == "http"
          ? std::string("HTTP")
          : absl::StrCat(o.channels, " channel(s)",
                         o.streaming ? ", ModelStreamInfer" : "");
  std::printf("# coalesce-bench: model %s at %s, %s, inputs %s, %s\n",
              o.model.c_str(), o.url.c_str(), mode.c_str(), run.shapes.c_str(),
              transport.c_str());
  std::printf("%s%s", RequestsHeader(run).c_str(), TableHeader(run).c_str());
  std::fflush(stdout);
}

// 1 with a message when no request of the whole run succeeded.
int CheckAnySuccess(const std::vector<LevelReport>& levels) {
  int64_t successes = 0;
  for (const LevelReport& level : levels) {
    for (const WindowResult& w : level.result.windows) successes += w.successes;
  }
  if (successes > 0) return 0;
  return Fail(absl::UnavailableError(
      "no request succeeded (see the warnings above for the errors)"));
}

// The server's instance time split per level and its idle diagnosis at the
// end, from --metrics-url; a scrape that fails is a warning, not an error.
class MetricsReport {
 public:
  explicit MetricsReport(const BenchOptions& o) : o_(o) {
    if (!o.metrics_url.empty()) last_ = Scrape();
  }

  void AfterLevel() {
    if (o_.metrics_url.empty()) return;
    std::optional<std::map<int, StateSeconds>> now = Scrape();
    if (now && last_) {
      for (const std::string& line : StateSplitLines(*last_, *now)) {
        std::printf("#   %s\n", line.c_str());
      }
    }
    last_ = std::move(now);
  }

  void AtEnd() {
    if (o_.metrics_url.empty() || text_.empty()) return;
    for (const InstanceDiagnosisText& d : ParseDiagnoses(text_, o_.model)) {
      std::printf("# server diagnosis, instance %d: %s: %s\n", d.instance,
                  d.reason.c_str(), d.detail.c_str());
    }
    std::fflush(stdout);
  }

 private:
  std::optional<std::map<int, StateSeconds>> Scrape() {
    absl::StatusOr<std::string> text =
        HttpGet(o_.metrics_url, std::chrono::seconds(5));
    if (!text.ok()) {
      Warn(absl::StrCat("note: --metrics-url: ", text.status().message()));
      return std::nullopt;
    }
    text_ = *std::move(text);
    return ParseInstanceStates(text_, o_.model);
  }

  const BenchOptions& o_;
  std::optional<std::map<int, StateSeconds>> last_;
  std::string text_;  // the last scrape
};

int Run(const BenchOptions& o) {
  std::unique_ptr<ModelControl> control_client;
  if (o.protocol == "http") {
    control_client =
        std::make_unique<HttpModelClient>(o.url, o.request_timeout);
  } else {
    control_client = std::make_unique<ModelClient>(
        CreateBenchChannel(o.url, -1), o.request_timeout);
  }
  ModelControl& control = *control_client;
  RunInfo run;
  run.model = o.model;
  run.model_version = o.model_version;
  run.url = o.url;
  run.mode = o.mode;
  run.arrival = o.arrival;
  run.channels = o.channels;
  run.streaming = o.streaming;
  run.protocol = o.protocol;
  run.cores = AvailableCores();
  absl::StatusOr<std::shared_ptr<const RequestPool>> requests =
      PrepareRequests(o, control, &run);
  if (!requests.ok()) return Fail(requests.status());

  SweepHooks hooks;
  hooks.server_stats = ServerStatsSource(o, &control);
  run.server_stats = hooks.server_stats != nullptr;
  PrintHeader(o, run);
  MetricsReport metrics(o);
  ProgressLine progress = ProgressLine::ForStderr();
  hooks.on_window = [&](const LevelReport& level, int w,
                        const WindowResult& r) {
    progress.Show(ProgressText(o, level, w, r));
  };
  hooks.on_level = [&](const LevelReport& level) {
    progress.Clear();
    std::printf("%s", TableRow(run, level).c_str());
    metrics.AfterLevel();
    std::fflush(stdout);
    for (const std::string& w : LevelWarnings(run, level)) Warn(w);
  };

  absl::StatusOr<std::unique_ptr<InferSender>> created =
      CreateSender(o, *std::move(requests));
  if (!created.ok()) return Fail(created.status());
  std::unique_ptr<InferSender> sender = *std::move(created);
  absl::StatusOr<std::vector<LevelReport>> levels =
      RunSweep(o, sender.get(), RealClock(), hooks);
  sender.reset();  // closes the streams before the report is written
  progress.Clear();
  if (!levels.ok()) return Fail(levels.status());
  metrics.AtEnd();
  if (absl::Status s = WriteOutputs(o, run, *levels); !s.ok()) return Fail(s);
  return CheckAnySuccess(*levels);
}

}  // namespace
}  // namespace coalesce::bench

int main(int argc, char** argv) {
  using namespace coalesce::bench;
  absl::StatusOr<BenchOptions> options = ParseBenchFlags(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr,
                 "coalesce-bench: %s\nRun coalesce-bench --help for usage.\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  if (options->show_help) {
    std::printf("%s", BenchUsage().c_str());
    return 0;
  }
  return Run(*options);
}
