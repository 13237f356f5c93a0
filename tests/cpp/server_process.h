// ServerProcess: runs the real coalesce-server binary for an end-to-end test,
// on 127.0.0.1 with a port the OS picks, and stops it at destruction.
// A reader thread drains the server's output into log() (so the server never
// blocks on a full pipe); the bound ports come from its "listening on
// ADDR:PORT" (gRPC) and "HTTP on http://ADDR:PORT/v2" lines. Thread-safe.
#ifndef COALESCE_TESTS_CPP_SERVER_PROCESS_H_
#define COALESCE_TESTS_CPP_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coalesce::testing {

class ServerProcess {
 public:
  // Starts the server on `repository` with `extra_args`; waits (bounded by
  // `timeout`) for its listening line. ok() tells whether it came up.
  ServerProcess(const std::string& repository,
                const std::vector<std::string>& extra_args,
                std::chrono::seconds timeout = std::chrono::seconds(60));
  ~ServerProcess();  // SIGKILL if still running

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  int http_port() const { return http_port_; }
  std::string address() const;
  std::string log() const;

  // Sends `signal` and waits (bounded) for the exit; returns the exit code,
  // or -1 when it did not exit in time or died by a signal.
  int StopWith(int signal, std::chrono::seconds timeout);

 private:
  void ReadOutput(int fd);

  pid_t pid_ = -1;
  int port_ = 0;
  int http_port_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string log_;   // guarded by mu_
  bool eof_ = false;  // guarded by mu_
};

}  // namespace coalesce::testing

#endif  // COALESCE_TESTS_CPP_SERVER_PROCESS_H_
