#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/http_compression.h"

namespace coalesce {
namespace {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// A client that writes bytes as given, so that tests can send what no HTTP
// library would (lies, garbage, half a body). Reads time out after 20 s, so
// that a server that never answers fails the test instead of hanging it.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { close(fd_); }

  bool connected() const { return connected_; }

  void Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n =
          send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  // One response (status line, headers, Content-Length body); nullopt when
  // the connection ends first.
  std::optional<RawResponse> Read() {
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    RawResponse r;
    std::vector<std::string> lines =
        absl::StrSplit(buffer_.substr(0, end), "\r\n");
    std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
    if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &r.status))
      return std::nullopt;
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t colon = lines[i].find(':');
      r.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
          std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    }
    buffer_.erase(0, end + 4);
    size_t length = 0;
    if (r.headers.contains("content-length")) {
      absl::SimpleAtoi(r.headers["content-length"], &length);
    }
    while (buffer_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

  // True when the server closed the connection (and sent nothing more).
  bool ClosedByPeer() { return buffer_.empty() && !Fill(); }

 private:
  bool Fill() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 20000) <= 0) return false;
    char chunk[65536];
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

// Answers at once with the request echoed (method, target and a header in
// headers, the body as body), or, when `deferred`, keeps the reply for the
// test to give.
class FakeHandler : public HttpHandler {
 public:
  bool deferred = false;
  bool compressible = false;

  void Handle(HttpRequest request, HttpReply reply) override {
    if (deferred) {
      absl::MutexLock lock(&mu_);
      bodies_.push_back(request.body);
      replies_.push_back(std::move(reply));
      disconnects_.push_back(request.disconnect);
      return;
    }
    HttpResponse response;
    response.headers.emplace_back("X-Method", request.method);
    response.headers.emplace_back("X-Target", request.target);
    response.headers.emplace_back(
        "X-Test", std::string(request.Header("x-test").value_or("")));
    response.body = request.body;
    response.compressible = compressible;
    std::move(reply)(std::move(response));
  }

  // The reply of the next request the server handed over, once it has.
  HttpReply TakeReply(std::string* body = nullptr,
                      std::shared_ptr<ClientDisconnect>* disconnect = nullptr) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::deque<HttpReply>* r) { return !r->empty(); }, &replies_));
    HttpReply reply = std::move(replies_.front());
    replies_.pop_front();
    if (body != nullptr) *body = bodies_.front();
    bodies_.pop_front();
    if (disconnect != nullptr) *disconnect = disconnects_.front();
    disconnects_.pop_front();
    return reply;
  }

 private:
  absl::Mutex mu_;
  std::deque<HttpReply> replies_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> bodies_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<ClientDisconnect>> disconnects_
      ABSL_GUARDED_BY(mu_);
};

std::string Post(const std::string& target, const std::string& body,
                 const std::string& extra_headers = "") {
  return absl::StrCat("POST ", target, " HTTP/1.1\r\nHost: t\r\n",
                      extra_headers, "Content-Length: ", body.size(),
                      "\r\n\r\n", body);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start() {
    options_.address = "127.0.0.1";
    options_.port = 0;
    options_.threads = 2;
    auto server = HttpServer::Start(options_, &handler_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  HttpServer::Options options_;
  FakeHandler handler_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start();
  RawConnection c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send("GET /v2/health/live HTTP/1.1\r\nHost: t\r\nX-Test: one\r\n\r\n");
  c.Send(Post("/v2/models/m/infer?x=1", "hello"));
  auto first = c.Read();
  auto second = c.Read();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->headers["x-method"], "GET");
  EXPECT_EQ(first->headers["x-test"], "one");
  EXPECT_EQ(second->headers["x-method"], "POST");
  EXPECT_EQ(second->headers["x-target"], "/v2/models/m/infer?x=1");
  EXPECT_EQ(second->body, "hello");
  EXPECT_EQ(second->headers["server"], "coalesce");
}

TEST_F(HttpServerTest, ChunkedBodiesAreAssembled) {
  Start();
  RawConnection c(server_->port());
  c.Send(
      "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hello world");
}

TEST_F(HttpServerTest, AnswersExpectContinueBeforeTheBody) {
  Start();
  RawConnection c(server_->port());
  c.Send(
      "POST /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
      "Content-Length: 4\r\n\r\n");
  auto go_on = c.Read();
  ASSERT_TRUE(go_on);
  EXPECT_EQ(go_on->status, 100);
  c.Send("body");
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "body");
}

TEST_F(HttpServerTest, AReplyMayComeFromAnotherThread) {
  handler_.deferred = true;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "later"));
  std::string body;
  HttpReply reply = handler_.TakeReply(&body);
  EXPECT_EQ(body, "later");
  EXPECT_EQ(server_->inflight(), 1);
  std::thread other([&reply] {
    HttpResponse r;
    r.status = 201;
    r.body = "done";
    std::move(reply)(std::move(r));
  });
  other.join();
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "done");
}

// A client that closes while its request is handled fires the request's
// disconnect (and its callback); the late reply is dropped.
TEST_F(HttpServerTest, AClientThatClosesFiresTheDisconnect) {
  handler_.deferred = true;
  Start();
  auto c = std::make_unique<RawConnection>(server_->port());
  c->Send(Post("/x", "gone"));
  std::shared_ptr<ClientDisconnect> disconnect;
  HttpReply reply = handler_.TakeReply(nullptr, &disconnect);
  ASSERT_NE(disconnect, nullptr);
  EXPECT_FALSE(disconnect->fired());
  absl::Notification fired;
  disconnect->OnFire([&fired] { fired.Notify(); });
  c.reset();  // closes the socket
  EXPECT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_TRUE(disconnect->fired());
  std::move(reply)(HttpResponse{});
  // The server still serves others.
  handler_.deferred = false;
  RawConnection next(server_->port());
  next.Send(Post("/y", "here"));
  auto r = next.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "here");
}

// A client that stays does not fire it, neither while it waits nor after
// its answer, when it sends its next request on the connection.
TEST_F(HttpServerTest, AClientThatStaysDoesNotFireTheDisconnect) {
  handler_.deferred = true;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "first"));
  std::shared_ptr<ClientDisconnect> first;
  HttpReply reply = handler_.TakeReply(nullptr, &first);
  std::move(reply)(HttpResponse{});
  ASSERT_TRUE(c.Read());
  c.Send(Post("/x", "second"));
  std::shared_ptr<ClientDisconnect> second;
  reply = handler_.TakeReply(nullptr, &second);
  EXPECT_FALSE(first->fired());
  EXPECT_FALSE(second->fired());
  std::move(reply)(HttpResponse{});
  ASSERT_TRUE(c.Read());
  EXPECT_FALSE(second->fired());
}

TEST_F(HttpServerTest, ABodyOverTheLimitGets400AndTheConnectionCloses) {
  options_.max_body_bytes = 1024;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", std::string(4096, 'a')));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("larger than the limit of 1024 bytes"),
            std::string::npos)
      << r->body;
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, ABodyThatDecompressesPastTheLimitGets400) {
  options_.max_body_bytes = 1024;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", Compress(ContentCoding::kGzip, std::string(8192, 'a')),
              "Content-Encoding: gzip\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("decompresses to more than 1024 bytes"),
            std::string::npos)
      << r->body;
}

TEST_F(HttpServerTest, ABodyThatNeverArrivesGets400AfterTheReadTimeout) {
  options_.read_timeout = std::chrono::milliseconds(200);
  Start();
  RawConnection c(server_->port());
  // Content-Length says 100; ten bytes come.
  c.Send(
      "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789");
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("did not arrive within 200 ms (Content-Length says "
                         "100 bytes)"),
            std::string::npos)
      << r->body;
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, AnIdleConnectionIsClosedSilently) {
  options_.idle_timeout = std::chrono::milliseconds(100);
  Start();
  RawConnection c(server_->port());
  c.Send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(c.Read());
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, MalformedHttpGets400) {
  Start();
  RawConnection c(server_->port());
  c.Send("THIS IS NOT HTTP\r\n\r\n");
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("malformed HTTP request header"), std::string::npos)
      << r->body;
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, ConnectionsPastTheCapGet503) {
  options_.max_connections = 1;
  Start();
  RawConnection first(server_->port());
  first.Send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(first.Read());  // counted and kept alive
  RawConnection second(server_->port());
  auto refused = second.Read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many open connections"), std::string::npos);
  EXPECT_TRUE(second.ClosedByPeer());
  // The first one still works.
  first.Send("GET /y HTTP/1.1\r\nHost: t\r\n\r\n");
  auto r = first.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, GzipRequestsAreDecodedAndAnswersCompressedOnRequest) {
  handler_.compressible = true;
  Start();
  RawConnection c(server_->port());
  const std::string body(5000, 'z');
  c.Send(Post("/x", Compress(ContentCoding::kGzip, body),
              "Content-Encoding: gzip\r\nAccept-Encoding: deflate\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headers["content-encoding"], "deflate");
  EXPECT_EQ(*Decompress(ContentCoding::kDeflate, r->body, 1 << 20), body);
}

TEST_F(HttpServerTest, OnlyCompressibleAnswersAreCompressed) {
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "plain", "Accept-Encoding: gzip\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->headers.contains("content-encoding"));
  EXPECT_EQ(r->body, "plain");
}

TEST_F(HttpServerTest, AnUnknownContentEncodingGets415) {
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "abc", "Content-Encoding: br\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_NE(r->body.find("'br' is not supported"), std::string::npos);
}

TEST_F(HttpServerTest, ShutdownAnswersWhatIsInFlightThenCloses) {
  handler_.deferred = true;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "in flight"));
  HttpReply reply = handler_.TakeReply();
  std::thread stopper(
      [this] { server_->Shutdown(std::chrono::milliseconds(20000)); });
  // Shutdown has begun once the port refuses connections.
  bool refused = false;
  for (int i = 0; i < 100000 && !refused; ++i) {
    refused = !RawConnection(server_->port()).connected();
  }
  ASSERT_TRUE(refused);
  HttpResponse answer;
  answer.body = "answered";
  std::move(reply)(std::move(answer));
  auto r = c.Read();
  stopper.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "answered");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, AReplyAfterShutdownIsDropped) {
  handler_.deferred = true;
  Start();
  RawConnection c(server_->port());
  c.Send(Post("/x", "never answered in time"));
  HttpReply reply = handler_.TakeReply();
  server_->Shutdown(std::chrono::milliseconds(0));
  std::move(reply)(HttpResponse{});  // must not touch the stopped server
  server_.reset();
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, ShutdownClosesIdleKeepAliveConnections) {
  Start();
  RawConnection c(server_->port());
  c.Send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(c.Read());
  server_->Shutdown(std::chrono::milliseconds(20000));
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST_F(HttpServerTest, BindFailureIsUnavailable) {
  Start();
  HttpServer::Options taken = options_;
  taken.port = server_->port();
  auto second = HttpServer::Start(taken, &handler_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coalesce
