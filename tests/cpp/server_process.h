// ServerProcess: runs the real coalesce-server binary for an end-to-end test,
// on 127.0.0.1 with a port the OS picks, and stops it at destruction.
// The bound port is read from the server's "listening on ADDR:PORT" log line.
#ifndef COALESCE_TESTS_CPP_SERVER_PROCESS_H_
#define COALESCE_TESTS_CPP_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
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
  std::string address() const;
  const std::string& log() const { return log_; }

  // Sends `signal` and waits (bounded) for the exit; returns the exit code,
  // or -1 when it did not exit in time or died by a signal.
  int StopWith(int signal, std::chrono::seconds timeout);

 private:
  void ReadLogUntil(std::chrono::steady_clock::time_point deadline,
                    bool stop_at_port);

  pid_t pid_ = -1;
  int log_fd_ = -1;
  int port_ = 0;
  std::string log_;
};

}  // namespace coalesce::testing

#endif  // COALESCE_TESTS_CPP_SERVER_PROCESS_H_
