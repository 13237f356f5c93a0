#include "tests/cpp/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

namespace coalesce::testing {

ServerProcess::ServerProcess(const std::string& repository,
                             const std::vector<std::string>& extra_args,
                             std::chrono::seconds timeout) {
  int fds[2];
  if (pipe(fds) != 0) return;
  std::vector<std::string> args = {COALESCE_SERVER_BINARY,
                                   "--model-repository",
                                   repository,
                                   "--grpc-address",
                                   "127.0.0.1",
                                   "--grpc-port",
                                   "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  log_fd_ = fds[0];
  ReadLogUntil(std::chrono::steady_clock::now() + timeout, true);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (log_fd_ >= 0) close(log_fd_);
}

std::string ServerProcess::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

void ServerProcess::ReadLogUntil(std::chrono::steady_clock::time_point deadline,
                                 bool stop_at_port) {
  static const std::regex kListening("listening on [^ ]+:([0-9]+)");
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{log_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    const ssize_t n = read(log_fd_, buffer, sizeof(buffer));
    if (n <= 0) return;  // the server closed its output: it exited
    log_.append(buffer, n);
    std::smatch match;
    if (stop_at_port && std::regex_search(log_, match, kListening)) {
      port_ = std::stoi(match[1]);
      return;
    }
  }
}

int ServerProcess::StopWith(int signal, std::chrono::seconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ReadLogUntil(deadline, false);  // until EOF: the process closed its output
  if (std::chrono::steady_clock::now() >= deadline) return -1;
  int status = 0;
  if (waitpid(pid_, &status, 0) != pid_) return -1;
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace coalesce::testing
