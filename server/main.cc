// coalesce-server: serves a Triton-style model repository of ONNX models
// over KServe v2 gRPC. See --help.
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "absl/synchronization/mutex.h"
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

// Makes the memory of large requests go back to the system once they are
// answered: buffers of 1 MiB and more are mapped and unmapped on their own
// (glibc otherwise raises its mmap threshold after the first large free and
// keeps later large buffers in its heaps), and free heap tops above 8 MiB
// are trimmed. Chosen by measurement (docs/security.md, "Memory after large
// requests"); COALESCE_MALLOC_TUNING=0 keeps glibc's defaults, for
// comparison.
void TuneAllocator() {
  const char* tuning = std::getenv("COALESCE_MALLOC_TUNING");
  if (tuning != nullptr && std::string_view(tuning) == "0") return;
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

// Abseil built without NDEBUG (Debian's is) checks every Mutex acquisition
// for lock-order cycles: a global graph updated on each Lock and each
// Mutex's destruction, about a tenth of the server's CPU time per request on
// the identity model (BENCHMARKS.md, "Overhead floor"). Lock order is
// checked where it costs nothing at serving time: unit tests keep the check,
// and CI runs clang's thread-safety analysis and TSan.
// COALESCE_MUTEX_DEADLOCK_CHECK=1 keeps it on, for debugging.
void ConfigureMutexChecks() {
  const char* check = std::getenv("COALESCE_MUTEX_DEADLOCK_CHECK");
  if (check != nullptr && std::string_view(check) == "1") return;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

// Until the server is about to turn ready, a shutdown signal ends the
// process at once, with status 128 + the signal (a shell's "killed by"):
// loading cannot be interrupted (a GPU model's warm-up tunes kernels, for
// minutes on a cold tuning cache), and nothing is served yet, so nothing is
// lost; waiting for the load would leave the signal unanswered until then.
// End() (Server::Start's before_ready) stops the watch: a signal the watch
// takes after that is raised again, pending for main's sigwait, which then
// shuts down gracefully. One state decides which of the two happens: End()
// after the watch chose to exit waits for the exit instead of letting the
// server turn ready. Polls with sigtimedwait. Logging from here is safe
// while other threads log (spdlog's loggers are thread-safe; flush_on(info)
// has written the line before _Exit).
class StartupSignalWatch {
 public:
  explicit StartupSignalWatch(const sigset_t& signals)
      : signals_(signals), thread_([this] { Watch(); }) {}
  ~StartupSignalWatch() {
    End();
    thread_.join();
  }
  StartupSignalWatch(const StartupSignalWatch&) = delete;
  StartupSignalWatch& operator=(const StartupSignalWatch&) = delete;

  void End() {
    State loading = State::kLoading;
    if (state_.compare_exchange_strong(loading, State::kEnded)) return;
    if (loading == State::kExiting) {
      for (;;) pause();  // the watch is ending the process
    }
  }

 private:
  enum class State { kLoading, kExiting, kEnded };

  void Watch() {
    const timespec poll{0, 100'000'000};
    while (state_.load() == State::kLoading) {
      const int number = sigtimedwait(&signals_, nullptr, &poll);
      if (number <= 0) continue;
      State loading = State::kLoading;
      if (!state_.compare_exchange_strong(loading, State::kExiting)) {
        kill(getpid(), number);  // ended: main's sigwait takes it
        return;
      }
      spdlog::warn("received signal {} while loading models: exiting", number);
      spdlog::default_logger()->flush();
      std::_Exit(128 + number);
    }
  }

  const sigset_t signals_;
  std::atomic<State> state_{State::kLoading};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  TuneAllocator();
  ConfigureMutexChecks();
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
  auto server = [&] {
    StartupSignalWatch watch(signals);
    return coalesce::Server::Start(*options, [&watch] { watch.End(); });
  }();
  if (!server.ok()) {
    spdlog::critical("{}", std::string(server.status().message()));
    return 1;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("received signal {}", signal_number);
  if (absl::Status s = (*server)->Shutdown(options->exit_timeout); !s.ok()) {
    // A batch that never completes (a hung device) must not keep the
    // process past its exit timeout. The shutdown goes on in a thread that
    // still uses the server, so exit without destroying anything.
    spdlog::error("{}", std::string(s.message()));
    spdlog::shutdown();
    std::_Exit(1);
  }
  return 0;
}
