// ServerOptions: everything coalesce-server is told on its command line, and
// ParseServerFlags, which builds it. Plain value type.
#ifndef COALESCE_SERVER_SERVER_OPTIONS_H_
#define COALESCE_SERVER_SERVER_OPTIONS_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/inflight_budget.h"
#include "server/protocol_restrictions.h"

namespace coalesce {

enum class ModelControlMode {
  kNone,      // load every model of the repository at start; no load/unload
  kExplicit,  // load only --load-model models; RepositoryModelLoad/Unload work
  kPoll,      // load every model, then follow the repository's changes
};

struct ServerOptions {
  std::string model_repository;
  std::string grpc_address = "0.0.0.0";
  int grpc_port = 8001;  // 0 = any free port; the bound port is logged
  ModelControlMode model_control_mode = ModelControlMode::kNone;
  std::chrono::seconds repository_poll{15};  // kPoll: between two looks
  std::vector<std::string> startup_models;   // --load-model, explicit mode
  std::string log_level = "info";
  // How long SIGTERM/SIGINT waits for queued and in-flight requests.
  std::chrono::seconds exit_timeout{30};
  // After this long a client connection gets a GOAWAY (in-flight calls have
  // exit_timeout to finish), so clients re-resolve and new replicas get
  // traffic. 0 = connections live forever.
  std::chrono::seconds grpc_max_connection_age{0};
  // Largest gRPC message received or sent; a larger one is refused by gRPC
  // with RESOURCE_EXHAUSTED before any of it is decoded.
  int64_t grpc_max_message_bytes = 256LL << 20;
  // Bytes of inference requests held at once, from arrival to answer; more
  // is refused with UNAVAILABLE. 0 = no limit. Default: a quarter of the
  // memory limit (inflight_budget.h).
  int64_t max_inflight_bytes = DefaultInflightBytes();
  // Requests one ModelStreamInfer call may have read and not yet answered
  // (queued, running, or answered and waiting for the ones before them or
  // for the client to read). At the limit the stream reads no more until
  // one is written, so a client that pipelines without reading is held back
  // by gRPC's flow control instead of growing the server's memory.
  int64_t grpc_stream_max_pending = 256;
  // --grpc-restricted-protocol: RPC groups that need a header.
  ProtocolRestrictions grpc_restricted_protocols;
  // TLS on the gRPC port, with Triton's flags. PEM file paths.
  bool grpc_use_ssl = false;
  bool grpc_use_ssl_mutual = false;  // require and verify client certificates
  std::string grpc_server_cert;
  std::string grpc_server_key;
  std::string grpc_root_cert;  // CA that signs client certificates (mutual)
  // The KServe v2 REST frontend (http_frontend.h), Triton's flags.
  bool allow_http = true;
  std::string http_address = "0.0.0.0";
  int http_port = 8000;  // 0 = any free port; the bound port is logged
  int http_thread_count = 8;
  // Largest HTTP request body, also once decompressed; larger gets 400.
  int64_t http_max_input_size = 64LL << 20;
  // Open HTTP connections; one more is answered 503 and closed.
  int http_max_connections = 1024;
  // How long a request's body may take to arrive once its header has (a
  // slower one gets 400), and how long a keep-alive connection may idle.
  std::chrono::seconds http_read_timeout{60};
  // --http-restricted-api: endpoint groups that need a header.
  ProtocolRestrictions http_restricted_apis;
  // Prometheus metrics at http://metrics_address:metrics_port/metrics.
  bool allow_metrics = true;
  std::string metrics_address = "0.0.0.0";
  int metrics_port = 8002;  // 0 = any free port; the bound port is logged
  // How often the idle diagnosis samples the models (Triton's flag name).
  std::chrono::milliseconds metrics_interval{2000};
  bool show_help = false;
};

// Parses argv. InvalidArgument with a message naming the bad flag.
absl::StatusOr<ServerOptions> ParseServerFlags(int argc,
                                               const char* const* argv);

// The text printed for --help.
std::string ServerUsage();

}  // namespace coalesce

#endif  // COALESCE_SERVER_SERVER_OPTIONS_H_
