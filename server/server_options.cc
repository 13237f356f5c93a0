#include "server/server_options.h"

#include <charconv>
#include <climits>
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

absl::StatusOr<bool> ParseBool(absl::string_view flag, absl::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be 'true' or 'false', got '", text, "'"));
}

using Setter = std::function<absl::Status(ServerOptions&, absl::string_view)>;

// A setter of a boolean flag.
Setter BoolFlag(const char* flag, bool ServerOptions::*field) {
  return [flag, field](ServerOptions& o, absl::string_view v) -> absl::Status {
    absl::StatusOr<bool> b = ParseBool(flag, v);
    if (!b.ok()) return b.status();
    o.*field = *b;
    return absl::OkStatus();
  };
}

// A setter of a string flag.
Setter StringFlag(std::string ServerOptions::*field) {
  return [field](ServerOptions& o, absl::string_view v) {
    o.*field = std::string(v);
    return absl::OkStatus();
  };
}

// A setter of an integer flag in [min, max], stored as T: an integer type
// or a std::chrono duration counted in the flag's unit.
template <typename T>
Setter IntFlag(const char* flag, T ServerOptions::*field, int64_t min,
               int64_t max) {
  return [=](ServerOptions& o, absl::string_view v) -> absl::Status {
    absl::StatusOr<int64_t> n = ParseInt(flag, v, min, max);
    if (!n.ok()) return n.status();
    o.*field = T(*n);
    return absl::OkStatus();
  };
}

const std::map<std::string, Setter, std::less<>>& Setters() {
  static const auto* setters = new std::map<std::string, Setter, std::less<>>{
      {"model-repository", StringFlag(&ServerOptions::model_repository)},
      {"grpc-address", StringFlag(&ServerOptions::grpc_address)},
      {"grpc-port", IntFlag("grpc-port", &ServerOptions::grpc_port, 0, 65535)},
      {"model-control-mode",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         if (v == "none") {
           o.model_control_mode = ModelControlMode::kNone;
         } else if (v == "explicit") {
           o.model_control_mode = ModelControlMode::kExplicit;
         } else if (v == "poll") {
           o.model_control_mode = ModelControlMode::kPoll;
         } else {
           return absl::InvalidArgumentError(
               absl::StrCat("--model-control-mode must be 'none', 'explicit' "
                            "or 'poll', got '",
                            v, "'"));
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
       BoolFlag("allow-metrics", &ServerOptions::allow_metrics)},
      {"metrics-address", StringFlag(&ServerOptions::metrics_address)},
      {"metrics-port",
       IntFlag("metrics-port", &ServerOptions::metrics_port, 0, 65535)},
      {"metrics-interval-ms",
       IntFlag("metrics-interval-ms", &ServerOptions::metrics_interval, 10,
               3600 * 1000)},
      {"grpc-max-connection-age-secs",
       IntFlag("grpc-max-connection-age-secs",
               &ServerOptions::grpc_max_connection_age, 0, 30 * 86400)},
      {"grpc-max-message-bytes",
       IntFlag("grpc-max-message-bytes", &ServerOptions::grpc_max_message_bytes,
               1024, INT_MAX)},
      {"max-inflight-bytes",
       IntFlag("max-inflight-bytes", &ServerOptions::max_inflight_bytes, 0,
               INT64_MAX)},
      {"grpc-stream-max-pending",
       IntFlag("grpc-stream-max-pending",
               &ServerOptions::grpc_stream_max_pending, 1, 1 << 20)},
      {"grpc-restricted-protocol",
       [](ServerOptions& o, absl::string_view v) -> absl::Status {
         return o.grpc_restricted_protocols.Add(v);
       }},
      {"grpc-use-ssl", BoolFlag("grpc-use-ssl", &ServerOptions::grpc_use_ssl)},
      {"grpc-use-ssl-mutual",
       BoolFlag("grpc-use-ssl-mutual", &ServerOptions::grpc_use_ssl_mutual)},
      {"grpc-server-cert", StringFlag(&ServerOptions::grpc_server_cert)},
      {"grpc-server-key", StringFlag(&ServerOptions::grpc_server_key)},
      {"grpc-root-cert", StringFlag(&ServerOptions::grpc_root_cert)},
      {"repository-poll-secs",
       IntFlag("repository-poll-secs", &ServerOptions::repository_poll, 1,
               24 * 3600)},
      {"exit-timeout-secs",
       IntFlag("exit-timeout-secs", &ServerOptions::exit_timeout, 0,
               24 * 3600)},
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
                             poll: load every model, then load, reload and
                             unload models as their folders change.
  --repository-poll-secs N   Poll mode: seconds between two looks at the
                             repository (default 15).
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
  --grpc-max-connection-age-secs N
                             Send each client connection a GOAWAY after N s
                             (its calls then have --exit-timeout-secs to
                             finish), so clients re-resolve and new replicas
                             get traffic (default 0: never).
  --grpc-max-message-bytes N Largest gRPC message received or sent, in bytes
                             (default 268435456 = 256 MiB, at most 2^31-1);
                             a larger request gets RESOURCE_EXHAUSTED.
  --max-inflight-bytes N     Bytes of inference requests (their messages) the
                             server holds at once, from arrival to answer; a
                             request beyond it gets UNAVAILABLE at once
                             (default: a quarter of the cgroup memory limit,
                             or of physical memory; 0: no limit).
  --grpc-stream-max-pending N
                             Requests one ModelStreamInfer stream may have
                             read and not yet answered (default 256); at the
                             limit it reads no more until one is written.
  --grpc-restricted-protocol <protocols>:<header>=<value>
                             Calls to these RPC groups (comma-separated:
                             health, metadata, inference, shared-memory,
                             model-config, model-repository, statistics,
                             trace, logging) need the request header with
                             that value, else UNAVAILABLE. Repeatable, one
                             header per group (docs/security.md).
  --grpc-use-ssl BOOL        Serve gRPC over TLS (default false); needs
                             --grpc-server-cert and --grpc-server-key.
  --grpc-server-cert FILE    The server's certificate chain, PEM.
  --grpc-server-key FILE     Its private key, PEM.
  --grpc-use-ssl-mutual BOOL Mutual TLS: also require client certificates
                             signed by --grpc-root-cert (default false;
                             implies --grpc-use-ssl).
  --grpc-root-cert FILE      CA certificates that sign client certificates,
                             PEM.
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
  if (options.grpc_use_ssl_mutual) options.grpc_use_ssl = true;
  if (options.grpc_use_ssl &&
      (options.grpc_server_cert.empty() || options.grpc_server_key.empty())) {
    return absl::InvalidArgumentError(
        "--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key");
  }
  if (options.grpc_use_ssl_mutual && options.grpc_root_cert.empty()) {
    return absl::InvalidArgumentError(
        "--grpc-use-ssl-mutual needs --grpc-root-cert");
  }
  return options;
}

}  // namespace coalesce
