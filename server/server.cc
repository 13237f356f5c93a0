#include "server/server.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

constexpr char kServiceName[] = "inference.GRPCInferenceService";
// What a liveness probe asks (docs/deploy.md): SERVING from the moment the
// server listens until it exits, loading and draining included, unless a
// model has lost every instance to a device fault (KServeService::
// ServerLive): the process cannot recover from that, a restart can.
constexpr char kLivenessService[] = "liveness";

// Readiness: "" and the inference service follow `serving`; liveness
// follows `live`.
void SetServing(grpc::Server* server, bool serving, bool live = true) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);  // every service name, liveness too
  health->SetServingStatus(kServiceName, serving);
  health->SetServingStatus(kLivenessService, live);
}

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read --", flag, " '", path, "'"));
  }
  return text.str();
}

// Plaintext, TLS or mutual TLS, from Triton's flags.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerOptions& options) {
  if (!options.grpc_use_ssl) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert =
      ReadPem("grpc-server-cert", options.grpc_server_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key =
      ReadPem("grpc-server-key", options.grpc_server_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (options.grpc_use_ssl_mutual) {
    absl::StatusOr<std::string> root =
        ReadPem("grpc-root-cert", options.grpc_root_cert);
    if (!root.ok()) return root.status();
    ssl.pem_root_certs = *root;
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

absl::Status LoadModels(const ServerOptions& options, ModelManager* manager) {
  if (options.model_control_mode != ModelControlMode::kExplicit) {
    return manager->LoadAll();
  }
  for (const std::string& name : options.startup_models) {
    // A failure is recorded and logged by the manager; keep serving.
    manager->Load(name).IgnoreError();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options, const std::function<void()>& before_ready) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(options);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<Server> server(new Server());
  server->manager_ =
      std::make_unique<ModelManager>(options.model_repository, RealClock());
  IdleDiagnostics::Options diagnosis;
  diagnosis.interval = options.metrics_interval;
  server->diagnostics_ = std::make_unique<IdleDiagnostics>(
      server->manager_.get(), RealClock(), diagnosis);
  server->kserve_ = std::make_unique<KServeService>(server->manager_.get(),
                                                    RealClock(), options);
  server->service_ =
      std::make_unique<InferenceService>(server->kserve_.get(), options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(options.grpc_address, ":", options.grpc_port);
  builder.AddListeningPort(address, *credentials, &server->port_);
  if (options.grpc_max_connection_age.count() > 0) {
    auto ms = [](std::chrono::seconds s) {
      return static_cast<int>(std::min<int64_t>(s.count() * 1000, INT_MAX));
    };
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               ms(options.grpc_max_connection_age));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               ms(options.exit_timeout));
  }
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(options.grpc_max_message_bytes));
  builder.SetMaxSendMessageSize(
      static_cast<int>(options.grpc_max_message_bytes));
  builder.RegisterService(server->service_.get());
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  SetServing(server->grpc_server_.get(), false);
  spdlog::info("listening on {}:{}{}", options.grpc_address, server->port_,
               options.grpc_use_ssl_mutual ? " (mutual TLS)"
               : options.grpc_use_ssl      ? " (TLS)"
                                           : "");
  if (options.allow_http) {
    if (absl::Status s = server->StartHttp(options); !s.ok()) {
      server->Shutdown(std::chrono::seconds(0)).IgnoreError();
      return s;
    }
  }
  if (options.allow_metrics) {
    auto metrics = MetricsEndpoint::Start(
        options.metrics_address, options.metrics_port, server->manager_.get(),
        server->diagnostics_.get());
    if (!metrics.ok()) {
      server->Shutdown(std::chrono::seconds(0)).IgnoreError();
      return metrics.status();
    }
    server->metrics_ = *std::move(metrics);
    spdlog::info("metrics on http://{}:{}/metrics", options.metrics_address,
                 server->metrics_->port());
  }

  if (absl::Status s = LoadModels(options, server->manager_.get()); !s.ok()) {
    server->Shutdown(std::chrono::seconds(0)).IgnoreError();
    return s;
  }
  server->diagnostics_->Start();
  if (options.model_control_mode == ModelControlMode::kPoll) {
    server->poller_ = std::make_unique<RepositoryPoller>(
        server->manager_.get(), options.model_repository, RealClock(),
        options.repository_poll);
    server->poller_->Start();
  }
  if (before_ready) before_ready();
  server->kserve_->set_ready(true);
  SetServing(server->grpc_server_.get(), true);
  spdlog::info("ready");
  server->health_watch_ =
      std::make_unique<PeriodicThread>(RealClock(), std::chrono::seconds(1));
  server->health_watch_->Start([s = server.get(), serving = true]() mutable {
    const std::vector<std::string> unhealthy = s->manager_->Unhealthy();
    if (unhealthy.empty() == serving) return;
    serving = unhealthy.empty();
    // A model without a healthy instance fails liveness too: no instance
    // comes back from a sticky fault in this process.
    SetServing(s->grpc_server_.get(), serving, /*live=*/serving);
    if (serving) {
      spdlog::info("ready again: every model has a healthy instance");
    } else {
      for (const std::string& line : unhealthy)
        spdlog::error("not ready, not live (a restart recovers it): {}", line);
    }
  });
  return server;
}

absl::Status Server::StartHttp(const ServerOptions& options) {
  http_frontend_ = std::make_unique<HttpFrontend>(kserve_.get(),
                                                  options.http_restricted_apis);
  HttpServer::Options http;
  http.address = options.http_address;
  http.port = options.http_port;
  http.threads = options.http_thread_count;
  http.max_body_bytes = static_cast<size_t>(options.http_max_input_size);
  http.max_connections = options.http_max_connections;
  http.read_timeout = options.http_read_timeout;
  http.idle_timeout = options.http_read_timeout;
  auto started = HttpServer::Start(http, http_frontend_.get());
  if (!started.ok()) return started.status();
  http_ = *std::move(started);
  spdlog::info("HTTP on http://{}:{}/v2", options.http_address, http_->port());
  return absl::OkStatus();
}

Server::~Server() {
  Shutdown(std::chrono::seconds(0)).IgnoreError();
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
}

absl::Status Server::Shutdown(std::chrono::seconds grace) {
  if (shut_down_ || grpc_server_ == nullptr) return absl::OkStatus();
  shut_down_ = true;
  if (health_watch_ != nullptr) health_watch_->Stop();
  kserve_->set_ready(false);
  SetServing(grpc_server_.get(), false);
  spdlog::info(
      "shutting down: finishing queued and in-flight requests (up to {} s)",
      grace.count());
  diagnostics_->Stop();
  if (poller_ != nullptr) poller_->Stop();
  shutdown_thread_ = std::thread([this, grace] { DrainAndStop(grace); });
  if (shutdown_done_.WaitForNotificationWithTimeout(
          absl::FromChrono(grace + kShutdownSlack))) {
    shutdown_thread_.join();
    spdlog::info("shut down");
    return absl::OkStatus();
  }
  std::vector<std::string> unfinished = manager_->Unfinished();
  if (unfinished.empty()) unfinished.push_back("RPCs that did not finish");
  return absl::DeadlineExceededError(
      absl::StrCat("shutdown did not finish within ", grace.count(), " s + ",
                   kShutdownSlack.count(),
                   " s; abandoned: ", absl::StrJoin(unfinished, "; ")));
}

void Server::DrainAndStop(std::chrono::seconds grace) {
  // Draining the batchers first sends every queued request to execution at
  // once instead of after its batching delay, and refuses new ones; gRPC
  // meanwhile stops accepting calls and waits for the running ones until the
  // grace period ends, then cancels what is left.
  std::thread http_stop([this, grace] {
    if (http_ != nullptr) http_->Shutdown(grace);
  });
  std::thread drain([this] {
    manager_->ShutdownAll();
    // Streams a client keeps open would otherwise hold gRPC's shutdown
    // until the grace period ends.
    service_->CloseStreams();
  });
  grpc_server_->Shutdown(std::chrono::system_clock::now() + grace);
  drain.join();
  grpc_server_->Wait();
  http_stop.join();
  shutdown_done_.Notify();
}

}  // namespace coalesce
