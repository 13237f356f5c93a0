// Server: coalesce-server's process-level object. Binds the gRPC port, serves
// GRPCInferenceService, grpc.health.v1.Health and server reflection, binds
// the HTTP port and serves KServe v2 REST there (both frontends on one
// KServeService), loads the repository's models, and shuts down gracefully.
//
// Start() returns a listening, serving server; Shutdown() is called once, from
// one thread (main, after SIGTERM/SIGINT).
#ifndef COALESCE_SERVER_SERVER_H_
#define COALESCE_SERVER_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "server/http_frontend.h"
#include "server/http_server.h"
#include "server/idle_diagnostics.h"
#include "server/inference_service.h"
#include "server/kserve_service.h"
#include "server/metrics_endpoint.h"
#include "server/model_manager.h"
#include "server/periodic_thread.h"
#include "server/repository_poller.h"
#include "server/server_options.h"

namespace coalesce {

class Server {
 public:
  // Binds, starts serving (live, not ready), loads the models the control
  // mode asks for (failures are recorded per model, not fatal), then turns
  // ready. Fails when the port cannot be bound or the repository read.
  // `before_ready`, when given, is called once the models are loaded, just
  // before the server turns ready (main ends its start-up signal watch
  // there).
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options,
      const std::function<void()>& before_ready = nullptr);

  ~Server();

  int port() const { return port_; }
  // The HTTP port; 0 when HTTP is off.
  int http_port() const { return http_ ? http_->port() : 0; }
  // The metrics endpoint's port; 0 when metrics are off.
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

  // Turns not ready (health NOT_SERVING), flushes every model's queue to
  // execution at once and refuses new requests, stops accepting RPCs and
  // HTTP connections, lets running requests finish for up to `grace`, then
  // cancels what is left.
  //
  // Bounded: returns by `grace` + kShutdownSlack even when a batch never
  // completes (a hung device). OK when everything finished; otherwise
  // DeadlineExceeded naming what was abandoned (ModelManager::Unfinished),
  // and the shutdown goes on in the background: the caller must then end
  // the process without destroying the server (std::_Exit), since the
  // destructor waits for that background shutdown to finish.
  absl::Status Shutdown(std::chrono::seconds grace);

  // What a shutdown waits beyond its grace period for cancelled RPCs to
  // finish before it gives up.
  static constexpr std::chrono::seconds kShutdownSlack{2};

 private:
  Server() = default;

  // Binds the HTTP port and serves KServe v2 REST on it.
  absl::Status StartHttp(const ServerOptions& options);
  // The shutdown steps after readiness is withdrawn; runs on
  // shutdown_thread_ and notifies shutdown_done_.
  void DrainAndStop(std::chrono::seconds grace);

  std::unique_ptr<ModelManager> manager_;
  std::unique_ptr<IdleDiagnostics> diagnostics_;  // reads manager_
  // Once ready: readiness (the health service) follows the models' health.
  std::unique_ptr<PeriodicThread> health_watch_;
  std::unique_ptr<RepositoryPoller> poller_;  // poll mode only
  std::unique_ptr<MetricsEndpoint> metrics_;  // null with --allow-metrics false
  std::unique_ptr<KServeService> kserve_;
  std::unique_ptr<InferenceService> service_;    // gRPC, on kserve_
  std::unique_ptr<HttpFrontend> http_frontend_;  // on kserve_
  std::unique_ptr<HttpServer> http_;             // null with --allow-http false
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  bool shut_down_ = false;
  std::thread shutdown_thread_;
  absl::Notification shutdown_done_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_SERVER_H_
