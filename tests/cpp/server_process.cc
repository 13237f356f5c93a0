#include "tests/cpp/server_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

namespace coalesce::testing {
namespace {

int PortIn(const std::string& log, const std::regex& line) {
  std::smatch match;
  return std::regex_search(log, match, line) ? std::stoi(match[1]) : 0;
}

const std::regex& GrpcLine() {
  static const std::regex kListening("listening on [^ \\n]+:([0-9]+)");
  return kListening;
}

const std::regex& HttpLine() {
  static const std::regex kHttp("HTTP on http://[^ \\n]+:([0-9]+)/v2");
  return kHttp;
}

}  // namespace

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
                                   "0",
                                   "--http-address",
                                   "127.0.0.1",
                                   "--http-port",
                                   "0",
                                   "--metrics-address",
                                   "127.0.0.1",
                                   "--metrics-port",
                                   "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = fork();
  if (pid_ == 0) {
    // The server dies with the test, even when the test dies first (a
    // sanitizer report aborts it before the destructor runs).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  reader_ = std::thread([this, fd = fds[0]] { ReadOutput(fd); });
  std::unique_lock<std::mutex> lock(mu_);
  // The HTTP line follows the gRPC one, unless HTTP is off.
  bool http_off = false;
  for (size_t i = 0; i < extra_args.size(); ++i) {
    http_off |= extra_args[i] == "--allow-http=false" ||
                (extra_args[i] == "--allow-http" && i + 1 < extra_args.size() &&
                 extra_args[i + 1] == "false");
  }
  const std::regex& last = http_off ? GrpcLine() : HttpLine();
  changed_.wait_for(lock, timeout,
                    [this, &last] { return eof_ || PortIn(log_, last) > 0; });
  port_ = PortIn(log_, GrpcLine());
  http_port_ = PortIn(log_, HttpLine());
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();  // EOF follows the exit
}

void ServerProcess::ReadOutput(int fd) {
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.append(buffer, n);
    changed_.notify_all();
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  changed_.notify_all();
}

std::string ServerProcess::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string ServerProcess::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

int ServerProcess::StopWith(int signal, std::chrono::seconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  {
    // The output closes when the process exits.
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_for(lock, timeout, [this] { return eof_; })) return -1;
  }
  int status = 0;
  if (waitpid(pid_, &status, 0) != pid_) return -1;
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace coalesce::testing
