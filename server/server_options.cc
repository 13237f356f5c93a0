#include "server/server_options.h"

#include <charconv>
#include <functional>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace coalesce {
namespace {

absl::StatusOr<int64_t> ParseInt(absl::string_view flag, absl::string_view text,
                                 int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " needs an integer in [", min, ", ", max,
                     "], got '", text, "'"));
  }
  return value;
}

using Setter = std::function<absl::Status(ServerOptions&, absl::string_view)>;

const std::map<std::string, Setter, std::less<>>& Setters() {
  static const auto* setters = new std::map<std::string, Setter, std::less<>>{
      {"model-repository",
       [](ServerOptions& o, absl::string_view v) {
         o.model_repository = std::string(v);
         return absl::OkStatus();
       }},
      {"grpc-address",
       [](ServerOptions& o, absl::string_view v) {
         o.grpc_address = std::string(v);
         return absl::OkStatus();
       }},
      {"grpc-port",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         auto port = ParseInt("grpc-port", v, 0, 65535);
         if (!port.ok()) return port.status();
         o.grpc_port = static_cast<int>(*port);
         return absl::OkStatus();
       }},
      {"model-control-mode",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         if (v == "none") {
           o.model_control_mode = ModelControlMode::kNone;
         } else if (v == "explicit") {
           o.model_control_mode = ModelControlMode::kExplicit;
         } else {
           return absl::InvalidArgumentError(absl::StrCat(
               "--model-control-mode must be 'none' or 'explicit', got '", v,
               "'"));
         }
         return absl::OkStatus();
       }},
      {"load-model",
       [](ServerOptions& o, absl::string_view v) {
         o.startup_models.emplace_back(v);
         return absl::OkStatus();
       }},
      {"log-level",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         static const char* kLevels[] = {"trace", "debug", "info",
                                         "warn",  "error", "off"};
         for (const char* level : kLevels) {
           if (v == level) {
             o.log_level = std::string(v);
             return absl::OkStatus();
           }
         }
         return absl::InvalidArgumentError(absl::StrCat(
             "--log-level must be trace|debug|info|warn|error|off, got '", v,
             "'"));
       }},
      {"allow-metrics",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         if (v != "true" && v != "false") {
           return absl::InvalidArgumentError(absl::StrCat(
               "--allow-metrics must be 'true' or 'false', got '", v, "'"));
         }
         o.allow_metrics = v == "true";
         return absl::OkStatus();
       }},
      {"metrics-address",
       [](ServerOptions& o, absl::string_view v) {
         o.metrics_address = std::string(v);
         return absl::OkStatus();
       }},
      {"metrics-port",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         auto port = ParseInt("metrics-port", v, 0, 65535);
         if (!port.ok()) return port.status();
         o.metrics_port = static_cast<int>(*port);
         return absl::OkStatus();
       }},
      {"metrics-interval-ms",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         auto ms = ParseInt("metrics-interval-ms", v, 10, 3600 * 1000);
         if (!ms.ok()) return ms.status();
         o.metrics_interval = std::chrono::milliseconds(*ms);
         return absl::OkStatus();
       }},
      {"exit-timeout-secs",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         auto secs = ParseInt("exit-timeout-secs", v, 0, 24 * 3600);
         if (!secs.ok()) return secs.status();
         o.exit_timeout = std::chrono::seconds(*secs);
         return absl::OkStatus();
       }},
  };
  return *setters;
}

}  // namespace

std::string ServerUsage() {
  return R"(Usage: coalesce-server --model-repository DIR [flags]

Serves the ONNX models of a Triton-style model repository over the KServe v2
gRPC protocol (package inference, service GRPCInferenceService), with dynamic
batching, grpc.health.v1.Health and gRPC server reflection.

Flags:
  --model-repository DIR     Model repository: DIR/<model>/config.pbtxt and
                             DIR/<model>/<version>/model.onnx. Required.
  --grpc-address ADDR        Address to listen on (default 0.0.0.0).
  --grpc-port PORT           Port to listen on (default 8001). 0 picks a free
                             port; the bound address is logged as
                             "listening on ADDR:PORT".
  --model-control-mode MODE  none (default): load every model at start.
                             explicit: load only --load-model models; clients
                             load and unload with RepositoryModelLoad/Unload.
  --load-model NAME          Model to load at start in explicit mode
                             (repeatable).
  --log-level LEVEL          trace|debug|info|warn|error|off (default info).
  --allow-metrics BOOL       Serve Prometheus metrics (default true).
  --metrics-address ADDR     Address of the metrics endpoint (default 0.0.0.0).
  --metrics-port PORT        Port of http://ADDR:PORT/metrics (default 8002).
                             0 picks a free port; the bound address is logged
                             as "metrics on http://ADDR:PORT/metrics".
  --metrics-interval-ms N    How often each model instance's time split is
                             sampled for the idle diagnosis (default 2000).
  --exit-timeout-secs N      On SIGTERM/SIGINT, how long to wait for queued and
                             in-flight requests before exiting (default 30).
  --help                     Print this text and exit.
)";
}

absl::StatusOr<ServerOptions> ParseServerFlags(int argc,
                                               const char* const* argv) {
  ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.show_help = true;
      return options;
    }
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "'"));
    }
    arg.remove_prefix(2);
    absl::string_view value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto it = Setters().find(arg);
    if (it == Setters().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", arg, "' (see --help)"));
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag '--", arg, "' needs a value"));
      }
      value = argv[++i];
    }
    if (absl::Status s = it->second(options, value); !s.ok()) return s;
  }
  if (options.model_repository.empty()) {
    return absl::InvalidArgumentError("--model-repository is required");
  }
  return options;
}

}  // namespace coalesce
