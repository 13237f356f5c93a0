#include "server/server_options.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"

namespace coalesce {
namespace {

// An integer flag in [min, max] stored as T: an integer type or a
// std::chrono duration counted in the flag's unit.
template <typename T>
void AddIntFlag(CLI::App& app, const std::string& name, T& field, int64_t min,
                int64_t max, const std::string& help) {
  int64_t shown;
  if constexpr (std::is_integral_v<T>) {
    shown = field;
  } else {
    shown = field.count();
  }
  app.add_option_function<int64_t>(
         name, [&field](const int64_t& v) { field = T(v); }, help)
      ->check(CLI::Range(min, max).description(""))
      ->type_name("N")
      ->default_str(std::to_string(shown));
}

// The flags, Triton's names and forms (base/command_line.h), writing into
// `o`, which must outlive the app.
std::unique_ptr<CLI::App> ServerCommandLine(ServerOptions& o) {
  auto app = MakeCommandLine(
      "Usage: coalesce-server --model-repository DIR [flags]\n\n"
      "Serves the ONNX models of a Triton-style model repository over the\n"
      "KServe v2 gRPC protocol (package inference, service\n"
      "GRPCInferenceService) and its REST protocol over HTTP, with dynamic\n"
      "batching, grpc.health.v1.Health and gRPC server reflection.");
  CLI::App& a = *app;
  a.add_option("--model-repository", o.model_repository,
               "Model repository: DIR/<model>/config.pbtxt and "
               "DIR/<model>/<version>/model.onnx. Required.")
      ->type_name("DIR");
  a.add_option("--grpc-address", o.grpc_address, "Address to listen on.")
      ->type_name("ADDR");
  AddIntFlag(a, "--grpc-port", o.grpc_port, 0, 65535,
             "Port to listen on; 0 picks a free port, logged as "
             "\"listening on ADDR:PORT\".");
  a.add_option_function<std::string>(
       "--model-control-mode",
       [&o](const std::string& v) {
         o.model_control_mode = v == "explicit" ? ModelControlMode::kExplicit
                                : v == "poll"   ? ModelControlMode::kPoll
                                                : ModelControlMode::kNone;
       },
       "none: load every model at start. explicit: load only --load-model "
       "models; clients load and unload with RepositoryModelLoad/Unload. "
       "poll: load every model, then follow the repository's changes.")
      ->check(CLI::IsMember({"none", "explicit", "poll"}).description(""))
      ->type_name("none|explicit|poll")
      ->default_str("none");
  AddIntFlag(a, "--repository-poll-secs", o.repository_poll, 1, 24 * 3600,
             "Poll mode: seconds between two looks at the repository.");
  a.add_option("--load-model", o.startup_models,
               "Model to load at start in explicit mode (repeatable).")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->type_name("NAME");
  a.add_option("--log-level", o.log_level, "Log level.")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"})
                  .description(""))
      ->type_name("trace|debug|info|warn|error|off");
  AddBoolFlag(a, "--allow-http", o.allow_http,
              "Serve the KServe v2 REST protocol over HTTP/1.1.");
  a.add_option("--http-address", o.http_address,
               "Address of the HTTP endpoint.")
      ->type_name("ADDR");
  AddIntFlag(a, "--http-port", o.http_port, 0, 65535,
             "Port of the HTTP endpoint; 0 picks a free port, logged as "
             "\"HTTP on http://ADDR:PORT\".");
  AddIntFlag(a, "--http-thread-count", o.http_thread_count, 1, 1024,
             "Threads serving HTTP connections.");
  AddIntFlag(a, "--http-max-input-size", o.http_max_input_size, 1024, INT64_MAX,
             "Largest HTTP request body in bytes, also once decompressed; a "
             "larger one gets 400.");
  AddIntFlag(a, "--http-max-connections", o.http_max_connections, 1, 1 << 20,
             "Open HTTP connections at most; one more gets 503 and is "
             "closed.");
  AddIntFlag(a, "--http-read-timeout-secs", o.http_read_timeout, 1, 3600,
             "How long a request body may take to arrive (slower: 400) and "
             "how long a keep-alive connection may stay idle.");
  AddOptionWith(
      a, "--http-restricted-api",
      [&o](const std::string& v) { return o.http_restricted_apis.Add(v); },
      "As --grpc-restricted-protocol, for the HTTP endpoints of those groups "
      "(a request without the header gets 403).",
      /*repeatable=*/true)
      ->type_name("<apis>:<header>=<value>");
  AddBoolFlag(a, "--allow-metrics", o.allow_metrics,
              "Serve Prometheus metrics.");
  a.add_option("--metrics-address", o.metrics_address,
               "Address of the metrics endpoint.")
      ->type_name("ADDR");
  AddIntFlag(a, "--metrics-port", o.metrics_port, 0, 65535,
             "Port of http://ADDR:PORT/metrics; 0 picks a free port, logged "
             "as \"metrics on http://ADDR:PORT/metrics\".");
  AddIntFlag(a, "--metrics-interval-ms", o.metrics_interval, 10, 3600 * 1000,
             "How often each model instance's time split is sampled for the "
             "idle diagnosis.");
  AddIntFlag(a, "--exit-timeout-secs", o.exit_timeout, 0, 24 * 3600,
             "On SIGTERM/SIGINT, how long to wait for queued and in-flight "
             "requests; work still running 2 s later is abandoned (exit 1).");
  AddIntFlag(a, "--grpc-max-connection-age-secs", o.grpc_max_connection_age, 0,
             30 * 86400,
             "Send each client connection a GOAWAY after N s (its calls then "
             "have --exit-timeout-secs to finish), so clients re-resolve and "
             "new replicas get traffic; 0: never.");
  AddIntFlag(a, "--grpc-max-message-bytes", o.grpc_max_message_bytes, 1024,
             INT_MAX,
             "Largest gRPC message received or sent; a larger request gets "
             "RESOURCE_EXHAUSTED.");
  AddIntFlag(a, "--max-inflight-bytes", o.max_inflight_bytes, 0, INT64_MAX,
             "Bytes of inference requests held at once, from arrival to "
             "answer; beyond it a request gets UNAVAILABLE at once (default: "
             "a quarter of the cgroup memory limit or of physical memory; 0: "
             "no limit).");
  a.get_option("--max-inflight-bytes")->default_str("");
  AddIntFlag(a, "--grpc-stream-max-pending", o.grpc_stream_max_pending, 1,
             1 << 20,
             "Requests one ModelStreamInfer stream may have read and not yet "
             "answered; at the limit it reads no more until one is written.");
  AddOptionWith(
      a, "--grpc-restricted-protocol",
      [&o](const std::string& v) { return o.grpc_restricted_protocols.Add(v); },
      "Calls to these RPC groups (comma-separated: health, metadata, "
      "inference, shared-memory, model-config, model-repository, "
      "statistics, trace, logging) need the request header with that value, "
      "else UNAVAILABLE. Repeatable, one header per group "
      "(docs/security.md).",
      /*repeatable=*/true)
      ->type_name("<protocols>:<header>=<value>");
  AddBoolFlag(a, "--grpc-use-ssl", o.grpc_use_ssl,
              "Serve gRPC over TLS; needs --grpc-server-cert and "
              "--grpc-server-key.");
  a.add_option("--grpc-server-cert", o.grpc_server_cert,
               "The server's certificate chain, PEM.")
      ->type_name("FILE");
  a.add_option("--grpc-server-key", o.grpc_server_key, "Its private key, PEM.")
      ->type_name("FILE");
  AddBoolFlag(a, "--grpc-use-ssl-mutual", o.grpc_use_ssl_mutual,
              "Mutual TLS: also require client certificates signed by "
              "--grpc-root-cert (implies --grpc-use-ssl).");
  a.add_option("--grpc-root-cert", o.grpc_root_cert,
               "CA certificates that sign client certificates, PEM.")
      ->type_name("FILE");
  return app;
}

}  // namespace

std::string ServerUsage() {
  ServerOptions defaults;
  return CommandLineUsage(*ServerCommandLine(defaults));
}

absl::StatusOr<ServerOptions> ParseServerFlags(int argc,
                                               const char* const* argv) {
  ServerOptions options;
  auto app = ServerCommandLine(options);
  absl::Status s = ParseCommandLine(*app, argc, argv, &options.show_help);
  if (!s.ok()) return s;
  if (options.show_help) return options;
  // Checked here rather than by CLI11, so that an unknown flag is what a
  // command line with both problems reports.
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
