// coalesce-server: serves a Triton-style model repository of ONNX models
// over KServe v2 gRPC. See --help.
#include <pthread.h>

#include <csignal>
#include <cstdio>

#include "server/server.h"
#include "server/server_options.h"
#include "spdlog/spdlog.h"

namespace {

// Blocks SIGINT and SIGTERM in this thread and every thread it starts later,
// so that the main thread alone receives them through sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = coalesce::ParseServerFlags(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "coalesce-server: %s\n\n%s",
                 std::string(options.status().message()).c_str(),
                 coalesce::ServerUsage().c_str());
    return 2;
  }
  if (options->show_help) {
    std::fputs(coalesce::ServerUsage().c_str(), stdout);
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(options->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::flush_on(spdlog::level::info);

  const sigset_t signals = BlockShutdownSignals();
  auto server = coalesce::Server::Start(*options);
  if (!server.ok()) {
    spdlog::critical("{}", std::string(server.status().message()));
    return 1;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("received signal {}", signal_number);
  (*server)->Shutdown(options->exit_timeout);
  return 0;
}
