// libFuzzer target: the HTTP frontend, from the bytes on the wire to the
// batcher. The first input byte picks what the rest is:
//   even  bytes a client sends on one connection to the real HttpServer +
//         HttpFrontend + KServeService over a real ModelManager
//         (identity_repository.h), on a loopback port: HTTP parsing (Beast,
//         with the server's limits), content codings, routing, the REST
//         bodies, ParseRestInfer, the decoder, the validator and the
//         batcher. The client then half-closes and reads to the end.
//   odd   a KServe REST inference body given to ParseRestInfer directly
//         (the JSON tensor decoder), the next two bytes its
//         Inference-Header-Content-Length (0xffff: none); when it parses,
//         the translated request is checked as the gRPC path would take it.
//
// Properties (a failure prints why and aborts, so libFuzzer keeps the input):
// - the server ends every connection within 5 s of the half-close, and
//   whatever it sent starts with an HTTP/1.1 status line;
// - every 64 inputs, a fresh connection still gets 200 from
//   /v2/health/ready (the server was not wedged);
// - a parsed REST body has one raw_input_contents entry per input that is
//   not in shared memory, and none for those that are.
// Seeds: corpus/http_request_fuzzer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "batching/clock.h"
#include "server/http_frontend.h"
#include "server/http_server.h"
#include "server/kserve_service.h"
#include "server/rest_infer.h"
#include "server/server_options.h"
#include "spdlog/spdlog.h"
#include "tests/fuzz/identity_repository.h"

namespace {

constexpr char kTarget[] = "http_request_fuzzer";

[[noreturn]] void Fail(const std::string& why) {
  coalesce::fuzz::Fail(kTarget, why);
}

// The server under test. Created on the first input and never destroyed:
// its threads outlive every input.
class Harness {
 public:
  Harness() {
    spdlog::set_level(spdlog::level::off);
    manager_ = coalesce::fuzz::LoadIdentityModels(kTarget);
    coalesce::ServerOptions options;
    options.max_inflight_bytes = 64 << 20;
    kserve_ = std::make_unique<coalesce::KServeService>(
        manager_.get(), coalesce::RealClock(), options);
    kserve_->set_ready(true);
    frontend_ = std::make_unique<coalesce::HttpFrontend>(
        kserve_.get(), coalesce::ProtocolRestrictions());
    coalesce::HttpServer::Options http;
    http.address = "127.0.0.1";
    http.port = 0;
    http.threads = 2;
    http.max_body_bytes = 1 << 20;
    http.read_timeout = std::chrono::milliseconds(1000);
    http.idle_timeout = std::chrono::milliseconds(1000);
    auto server = coalesce::HttpServer::Start(http, frontend_.get());
    if (!server.ok()) Fail(server.status().ToString());
    server_ = *std::move(server);
  }

  int port() const { return server_->port(); }

 private:
  std::unique_ptr<coalesce::ModelManager> manager_;
  std::unique_ptr<coalesce::KServeService> kserve_;
  std::unique_ptr<coalesce::HttpFrontend> frontend_;
  std::unique_ptr<coalesce::HttpServer> server_;
};

// Closes the client's socket with a reset, so that its side leaves no
// TIME_WAIT behind.
void CloseWithReset(int fd) {
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
}

// Binds `fd` to the next of the loopback source addresses 127.0.0.1 to
// 127.255.255.254, in turn: the server closes first after many answers (an
// error, Connection: close), leaving its side of the connection in
// TIME_WAIT for a minute; at a thousand connections a second, one source
// address would run out of ports.
void BindNextSource(int fd) {
  static uint32_t next = 0;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl(0x7f000001u + next++ % 0xfffffeu);
  if (bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
    Fail(absl::StrCat("cannot bind a loopback source: ", std::strerror(errno)));
  }
}

// Sends `bytes` on a new connection, half-closes, and returns everything
// the server sent until it closed; fails when it has not closed in 5 s.
std::string Exchange(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  BindNextSource(fd);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's -timeout alarm (SIGALRM, every second) interrupts system
  // calls: each one below goes on after EINTR.
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINTR) {
      Fail(
          absl::StrCat("cannot connect to the server: ", std::strerror(errno)));
    }
    // The connection goes on in the background: wait until it is writable.
    pollfd p{fd, POLLOUT, 0};
    while (poll(&p, 1, 5000) < 0 && errno == EINTR) {
    }
  }
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n =
        send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server closed early (e.g. a 400 then close)
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string received;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      CloseWithReset(fd);
      Fail("the server did not end the connection within 5 s");
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above decides
    char chunk[16384];
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(chunk, static_cast<size_t>(n));
  }
  CloseWithReset(fd);
  return received;
}

void CheckParsedBody(const uint8_t* data, size_t size) {
  std::optional<size_t> header_length;
  if (size >= 2) {
    const size_t n = static_cast<size_t>(data[0]) << 8 | data[1];
    if (n != 0xffff) header_length = n;
    data += 2;
    size -= 2;
  }
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto parsed = coalesce::ParseRestInfer(body, header_length, "m", "");
  if (!parsed.ok()) return;
  int in_memory = 0;
  for (const auto& input : parsed->proto.inputs()) {
    if (input.parameters().contains("shared_memory_region")) ++in_memory;
  }
  if (parsed->proto.raw_input_contents_size() !=
      parsed->proto.inputs_size() - in_memory) {
    Fail("a parsed REST body's raw contents do not match its inputs");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 1) {
    CheckParsedBody(data + 1, size - 1);
    return 0;
  }
  static Harness* harness = new Harness();
  static int inputs = 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string answer = Exchange(harness->port(), bytes);
  if (!answer.empty() && !absl::StartsWith(answer, "HTTP/1.")) {
    Fail("the server sent something that is not an HTTP answer");
  }
  if (++inputs % 64 == 0) {
    const std::string health = Exchange(
        harness->port(), "GET /v2/health/ready HTTP/1.1\r\nHost: f\r\n\r\n");
    if (!absl::StartsWith(health, "HTTP/1.1 200")) {
      Fail("the server no longer answers /v2/health/ready with 200");
    }
  }
  return 0;
}
