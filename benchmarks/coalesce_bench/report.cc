#include "benchmarks/coalesce_bench/report.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/coalesce_bench/cpu_usage.h"
#include "benchmarks/coalesce_bench/window_recorder.h"
#include "nlohmann/json.hpp"

namespace coalesce::bench {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

double InferPerSecond(const RunInfo& run, const WindowResult& w) {
  return w.throughput_rps * static_cast<double>(run.batch_size);
}

std::string LevelName(const LevelReport& level) {
  return level.mode == LoadMode::kClosedLoop
             ? absl::StrCat("concurrency ", level.concurrency)
             : absl::StrFormat("rate %.6g/s", level.request_rate);
}

std::string LevelColumn(const LevelReport& level) {
  return level.mode == LoadMode::kClosedLoop
             ? absl::StrCat(level.concurrency)
             : absl::StrFormat("%.6g", level.request_rate);
}

// A server-split value for the table, or "-" when not measured.
std::string ServerCell(const ServerSideSplit& s, double value) {
  return s.valid ? absl::StrFormat("%.1f", value) : "-";
}

std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) {
    return std::string(s);
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

using Json = nlohmann::ordered_json;  // keys in the order written

// Non-finite doubles are written as null by the library, which keeps the
// file valid JSON.
Json JsonLatency(const LatencySummary& l) {
  return Json{{"count", l.count},        {"min", Ms(l.min_ns)},
              {"mean", l.mean_ns / 1e6}, {"p50", Ms(l.p50_ns)},
              {"p90", Ms(l.p90_ns)},     {"p95", Ms(l.p95_ns)},
              {"p99", Ms(l.p99_ns)},     {"p99_9", Ms(l.p999_ns)},
              {"max", Ms(l.max_ns)}};
}

Json JsonServer(const ServerSideSplit& s) {
  if (!s.valid) return nullptr;
  return Json{{"requests", s.requests},
              {"failures", s.failures},
              {"inferences", s.inferences},
              {"executions", s.executions},
              {"avg_request_us", s.avg_request_us},
              {"avg_queue_us", s.avg_queue_us},
              {"avg_compute_input_us", s.avg_compute_input_us},
              {"avg_compute_infer_us", s.avg_compute_infer_us},
              {"avg_compute_output_us", s.avg_compute_output_us},
              {"avg_batch_size", s.avg_batch_size}};
}

Json JsonErrors(const WindowResult& w) {
  Json errors = Json::object();
  for (const auto& [code, count] : w.errors) errors[GrpcCodeName(code)] = count;
  return errors;
}

Json JsonWindow(const RunInfo& run, const WindowResult& w) {
  return Json{{"duration_s", w.duration_s},
              {"throughput_infer_per_s", InferPerSecond(run, w)},
              {"throughput_requests_per_s", w.throughput_rps},
              {"successes", w.successes},
              {"error_count", w.error_count},
              {"errors", JsonErrors(w)},
              {"latency_ms", JsonLatency(w.latency)},
              {"server", JsonServer(w.server)},
              {"client_cpu_percent", 100 * w.client_cpu_cores},
              {"sends", w.sends},
              {"late_sends", w.late_sends},
              {"mean_send_lag_ms",
               w.sends > 0 ? Ms(w.total_send_lag_ns) / w.sends : 0.0},
              {"max_send_lag_ms", Ms(w.max_send_lag_ns)}};
}

Json JsonLevel(const RunInfo& run, const LevelReport& level) {
  Json windows = Json::array();
  for (const WindowResult& w : level.result.windows) {
    windows.push_back(JsonWindow(run, w));
  }
  const bool closed = level.mode == LoadMode::kClosedLoop;
  return Json{{"concurrency", closed ? Json(level.concurrency) : Json()},
              {"request_rate", closed ? Json() : Json(level.request_rate)},
              {"stable", level.result.stable},
              {"summarized_windows", level.result.summarized_windows},
              {"sender_thread_busy_percent", 100 * level.sender_thread_busy},
              {"summary", JsonWindow(run, level.result.summary)},
              {"windows", std::move(windows)}};
}

}  // namespace

std::string GrpcCodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

std::string ErrorSummary(const WindowResult& window) {
  std::vector<std::string> parts;
  for (const auto& [code, count] : window.errors) {
    parts.push_back(absl::StrCat(GrpcCodeName(code), "=", count));
  }
  return absl::StrJoin(parts, ";");
}

std::string RequestsHeader(const RunInfo& run) {
  if (!run.padding_mask.empty()) {
    return absl::StrFormat(
        "# padding mask %s: L in [%d, %d] of S=%d per row, mean fill %.3f "
        "(mean L / S over %d request variant%s, sent round-robin)\n",
        run.padding_mask, run.mask_min_length, run.mask_max_length,
        run.mask_seq_len, run.mask_mean_fill, run.request_variants,
        run.request_variants == 1 ? "" : "s");
  }
  if (run.request_variants > 1) {
    return absl::StrFormat(
        "# %d request variants (inputs from successive seeds), sent "
        "round-robin\n",
        run.request_variants);
  }
  return "";
}

std::string TableHeader(const RunInfo& run) {
  return absl::StrFormat(
      "%12s %10s %8s %8s %8s %8s %8s %7s %9s %9s %9s %9s %6s %6s %7s\n",
      run.mode == LoadMode::kClosedLoop ? "concurrency" : "rate/s", "infer/s",
      "p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99.9 ms", "errors", "queue us",
      "input us", "infer us", "output us", "batch", "cpu%", "windows");
}

std::string TableRow(const RunInfo& run, const LevelReport& level) {
  const WindowResult& w = level.result.summary;
  const ServerSideSplit& s = w.server;
  return absl::StrFormat(
      "%12s %10.1f %8.3f %8.3f %8.3f %8.3f %8.3f %7d %9s %9s %9s %9s %6s "
      "%6.0f %7s\n",
      LevelColumn(level), InferPerSecond(run, w), Ms(w.latency.p50_ns),
      Ms(w.latency.p90_ns), Ms(w.latency.p95_ns), Ms(w.latency.p99_ns),
      Ms(w.latency.p999_ns), w.error_count, ServerCell(s, s.avg_queue_us),
      ServerCell(s, s.avg_compute_input_us),
      ServerCell(s, s.avg_compute_infer_us),
      ServerCell(s, s.avg_compute_output_us),
      s.valid ? absl::StrFormat("%.2f", s.avg_batch_size) : "-",
      100 * w.client_cpu_cores,
      absl::StrCat(level.result.windows.size(),
                   level.result.stable ? "" : "*"));
}

std::vector<std::string> LevelWarnings(const RunInfo& run,
                                       const LevelReport& level) {
  std::vector<std::string> out;
  const WindowResult& w = level.result.summary;
  const std::string name = LevelName(level);
  const double share = w.client_cpu_cores / run.cores;
  if (share > kClientSaturation) {
    out.push_back(absl::StrFormat(
        "warning: at %s the client used %.2f of %d cores (%.0f%%): it may be "
        "the bottleneck; run it on other cores or another machine",
        name, w.client_cpu_cores, run.cores, 100 * share));
  }
  if (level.sender_thread_busy > kClientSaturation) {
    out.push_back(absl::StrFormat(
        "warning: at %s the sending thread was busy %.0f%% of the time: the "
        "client is near saturation",
        name, 100 * level.sender_thread_busy));
  }
  if (w.sends > 0 && w.late_sends * 100 > w.sends) {
    out.push_back(absl::StrFormat(
        "warning: at %s %.1f%% of requests went out more than %.0f ms after "
        "their scheduled time (worst %.1f ms); the delay is part of their "
        "latency",
        name, 100.0 * w.late_sends / w.sends, Ms(kLateSendNs),
        Ms(w.max_send_lag_ns)));
  }
  if (w.error_count > 0) {
    std::string example;
    if (!w.error_examples.empty()) {
      example =
          absl::StrCat(" (e.g. ", GrpcCodeName(w.error_examples.begin()->first),
                       ": ", w.error_examples.begin()->second, ")");
    }
    out.push_back(absl::StrCat("warning: at ", name, " ", w.error_count,
                               " requests failed: ", ErrorSummary(w), example));
  }
  if (!level.result.stable && level.result.windows.size() >= 3) {
    out.push_back(
        absl::StrCat("note: ", name, " did not become stable within ",
                     level.result.windows.size(),
                     " windows (marked *); the last three are reported. Raise "
                     "--max-windows or --window-ms, or --stability-percent"));
  }
  return out;
}

std::string CsvText(const RunInfo& run,
                    const std::vector<LevelReport>& levels) {
  std::string out =
      "mode,concurrency,request_rate,arrival,batch_size,throughput_infer_per_s,"
      "throughput_requests_per_s,p50_ms,p90_ms,p95_ms,p99_ms,p99_9_ms,mean_ms,"
      "successes,errors,error_codes,server_avg_request_us,server_queue_us,"
      "server_compute_input_us,server_compute_infer_us,"
      "server_compute_output_us,server_avg_batch_size,client_cpu_percent,"
      "late_sends,windows,stable\n";
  for (const LevelReport& level : levels) {
    const WindowResult& w = level.result.summary;
    const ServerSideSplit& s = w.server;
    const bool closed = level.mode == LoadMode::kClosedLoop;
    auto server = [&](double v) {
      return s.valid ? absl::StrFormat("%.3f", v) : "";
    };
    absl::StrAppend(&out, closed ? "closed" : "open", ",",
                    closed ? absl::StrCat(level.concurrency) : "", ",",
                    closed ? "" : absl::StrFormat("%.6g", level.request_rate),
                    ",", closed ? "" : std::string(ArrivalName(run.arrival)),
                    ",", run.batch_size, ",");
    absl::StrAppend(
        &out, absl::StrFormat("%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,",
                              InferPerSecond(run, w), w.throughput_rps,
                              Ms(w.latency.p50_ns), Ms(w.latency.p90_ns),
                              Ms(w.latency.p95_ns), Ms(w.latency.p99_ns),
                              Ms(w.latency.p999_ns), w.latency.mean_ns / 1e6));
    absl::StrAppend(
        &out, w.successes, ",", w.error_count, ",", CsvField(ErrorSummary(w)),
        ",", server(s.avg_request_us), ",", server(s.avg_queue_us), ",",
        server(s.avg_compute_input_us), ",", server(s.avg_compute_infer_us),
        ",", server(s.avg_compute_output_us), ",", server(s.avg_batch_size),
        ",", absl::StrFormat("%.1f", 100 * w.client_cpu_cores), ",",
        w.late_sends, ",", level.result.windows.size(), ",",
        level.result.stable ? "true" : "false", "\n");
  }
  return out;
}

std::string JsonText(const RunInfo& run,
                     const std::vector<LevelReport>& levels) {
  Json items = Json::array();
  for (const LevelReport& level : levels)
    items.push_back(JsonLevel(run, level));
  const bool closed = run.mode == LoadMode::kClosedLoop;
  const Json report{
      {"tool", "coalesce-bench"},
      {"model", run.model},
      {"model_version", run.model_version},
      {"url", run.url},
      {"mode", closed ? "closed" : "open"},
      {"arrival", closed ? Json() : Json(ArrivalName(run.arrival))},
      {"batch_size", run.batch_size},
      {"channels", run.channels},
      {"protocol", run.protocol},
      {"rpc", run.protocol == "http" ? "POST .../infer"
              : run.streaming        ? "ModelStreamInfer"
                                     : "ModelInfer"},
      {"inputs", run.shapes},
      {"request_variants", run.request_variants},
      {"padding_mask", run.padding_mask.empty()
                           ? Json()
                           : Json{{"flag", run.padding_mask},
                                  {"seq_len", run.mask_seq_len},
                                  {"min_length", run.mask_min_length},
                                  {"max_length", run.mask_max_length},
                                  {"mean_fill", run.mask_mean_fill}}},
      {"server_statistics", run.server_stats},
      {"client_cores", run.cores},
      {"latency_unit", "ms"},
      {"server_time_unit", "us"},
      {"levels", std::move(items)}};
  // Invalid UTF-8 in a name is replaced rather than thrown on.
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace coalesce::bench
