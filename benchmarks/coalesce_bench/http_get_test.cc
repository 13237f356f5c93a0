#include "benchmarks/coalesce_bench/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

// A loopback HTTP server that answers one connection with `response` and
// records the request it read.
class OneShotServer {
 public:
  explicit OneShotServer(std::string response) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), length);
    listen(fd_, 1);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, response = std::move(response)] {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      char buffer[4096];
      // The request ends with an empty line; curl sends it in one write.
      while (request_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(client, buffer, sizeof(buffer));
        if (n <= 0) break;
        request_.append(buffer, static_cast<size_t>(n));
      }
      (void)!write(client, response.data(), response.size());
      close(client);
    });
  }
  ~OneShotServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }

  int port() const { return port_; }
  // REQUIRES: the exchange is over (the client has its answer).
  const std::string& request() const { return request_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

TEST(HttpGetTest, ReturnsTheBodyOfA200AndAsksForMetricsByDefault) {
  OneShotServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n"
      "up 1\nx 2.5\n");
  auto body = HttpGet(absl::StrCat("127.0.0.1:", server.port()),
                      std::chrono::seconds(10));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "up 1\nx 2.5\n");
  EXPECT_EQ(server.request().rfind("GET /metrics HTTP/1.1\r\n", 0), 0u)
      << server.request();
}

TEST(HttpGetTest, AnotherStatusIsUnavailable) {
  OneShotServer server(
      "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n"
      "\r\n");
  auto body = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/x"),
                      std::chrono::seconds(10));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(body.status().message().find("404"), std::string::npos)
      << body.status();
}

TEST(HttpGetTest, UnreachableOrMalformedUrlsAreErrors) {
  EXPECT_EQ(HttpGet("http://nohostport/metrics", std::chrono::seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpGet("ftp://127.0.0.1:21/metrics", std::chrono::seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Port 1 on loopback: nothing listens there.
  EXPECT_EQ(
      HttpGet("127.0.0.1:1/metrics", std::chrono::seconds(1)).status().code(),
      absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coalesce::bench
