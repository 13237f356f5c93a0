#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "nlohmann/json.hpp"
#include "server/http_compression.h"

namespace coalesce {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kHeaderLimit = 16 * 1024;

std::string ErrorBody(absl::string_view message) {
  return nlohmann::json{{"error", std::string(message)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse ErrorResponse(int status, absl::string_view message) {
  HttpResponse response;
  response.status = status;
  response.body = ErrorBody(message);
  return response;
}

}  // namespace

std::optional<std::string_view> HttpRequest::Header(
    std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return std::nullopt;
}

class Session;

// Replies may come after the server stopped (a request that outlived the
// grace period): the gate, shared with every reply, drops them then.
struct ReplyGate {
  absl::Mutex mu;
  bool open ABSL_GUARDED_BY(mu) = true;
};

class HttpServer::Impl {
 public:
  Impl(const Options& options, HttpHandler* handler)
      : options(options),
        handler(handler),
        contexts(MakeContexts(std::max(1, options.threads))),
        acceptor(contexts[0]->get_executor()),
        gate(std::make_shared<ReplyGate>()) {
    for (auto& c : contexts) work.push_back(asio::make_work_guard(*c));
  }

  // One io_context per thread, each run by its thread alone: a connection
  // lives on one of them (round-robin), so its handlers need no strand, and
  // an answer posted from a batcher thread wakes just that connection's
  // thread. (One io_context shared by every thread woke them through one
  // condition variable: on a 2-core machine most of the HTTP path's time
  // went to futex wake-ups and context switches.)
  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(std::make_unique<asio::io_context>(1));
    }
    return out;
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  absl::Status Listen();
  void Accept();
  void Shutdown(std::chrono::milliseconds grace);

  void Register(const std::shared_ptr<Session>& session) {
    absl::MutexLock lock(&mu);
    sessions[session.get()] = session;
  }
  void Unregister(Session* session) {
    absl::MutexLock lock(&mu);
    sessions.erase(session);
  }
  void RequestStarted() {
    absl::MutexLock lock(&mu);
    ++inflight;
  }
  void RequestFinished() {
    absl::MutexLock lock(&mu);
    --inflight;
  }

  const Options options;
  HttpHandler* const handler;
  // First: destroyed last.
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  size_t next_context = 0;  // the acceptor's handler only
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  const std::shared_ptr<ReplyGate> gate;
  std::atomic<int> connections{0};
  std::atomic<bool> stopping{false};
  int port = 0;

  mutable absl::Mutex mu;
  std::map<Session*, std::shared_ptr<Session>> sessions ABSL_GUARDED_BY(mu);
  int inflight ABSL_GUARDED_BY(mu) = 0;
  bool shut_down ABSL_GUARDED_BY(mu) = false;
};

// One connection. Every member runs on the thread of the connection's
// io_context, except Deliver, which posts onto it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer::Impl* server, tcp::socket socket)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()) {}

  void Start(bool refused) {
    if (refused) {
      keep_alive_ = false;
      Write(ErrorResponse(503, "too many open connections; try again later"));
      return;
    }
    ReadHeader();
  }

  // The handler's answer to the request in flight, from any thread.
  static void Deliver(const std::shared_ptr<ReplyGate>& gate,
                      const std::weak_ptr<Session>& weak,
                      HttpResponse response) {
    absl::MutexLock lock(&gate->mu);
    if (!gate->open) return;
    std::shared_ptr<Session> session = weak.lock();
    if (session == nullptr) return;
    asio::post(session->socket_.get_executor(),
               [session, response = std::move(response)]() mutable {
                 session->Write(std::move(response));
               });
  }

  tcp::socket& socket() { return socket_; }

  // Closes the connection when it waits for a request that has not begun.
  void CloseIfIdle() {
    if (phase_ == Phase::kHeader && buffer_.size() == 0 &&
        !parser_->got_some()) {
      Close();
    }
  }

  void Close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    ++timer_generation_;
    timer_.cancel();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_->connections.fetch_sub(1);
    server_->Unregister(this);  // may destroy this; nothing after
  }

 private:
  enum class Phase { kHeader, kBody, kHandling, kWriting, kClosed };

  void ReadHeader() {
    phase_ = Phase::kHeader;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(server_->options.max_body_bytes);
    Arm(server_->options.idle_timeout);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) {
          self->OnHeader(ec);
        });
  }

  void OnHeader(beast::error_code ec) {
    const bool timed_out = Disarm();
    if (phase_ == Phase::kClosed) return;
    if (ec) {
      // A connection that goes quiet between requests just closes.
      if (timed_out && buffer_.size() == 0 && !parser_->got_some()) {
        return Close();
      }
      return ReadFailed(ec, timed_out, "request header");
    }
    auto& header = parser_->get();
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      auto go_on = std::make_shared<http::response<http::empty_body>>(
          http::status::continue_, header.version());
      http::async_write(socket_, *go_on,
                        [self = shared_from_this(), go_on](
                            beast::error_code write_ec, size_t) {
                          if (write_ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kBody;
    Arm(server_->options.read_timeout);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnBody(ec);
                     });
  }

  void OnBody(beast::error_code ec) {
    const bool timed_out = Disarm();
    if (phase_ == Phase::kClosed) return;
    if (ec) return ReadFailed(ec, timed_out, "request body");
    Dispatch();
  }

  void ReadFailed(beast::error_code ec, bool timed_out,
                  absl::string_view what) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset ||
        (ec == asio::error::operation_aborted && !timed_out)) {
      return Close();
    }
    keep_alive_ = false;
    if (timed_out) {
      const auto& options = server_->options;
      const int64_t ms =
          (phase_ == Phase::kBody ? options.read_timeout : options.idle_timeout)
              .count();
      std::string expected;
      if (phase_ == Phase::kBody && parser_->content_length()) {
        expected = absl::StrCat(" (Content-Length says ",
                                *parser_->content_length(), " bytes)");
      }
      return Write(ErrorResponse(
          400, absl::StrCat("the ", what, " did not arrive within ", ms, " ms",
                            expected)));
    }
    if (ec == http::error::body_limit) {
      return Write(ErrorResponse(
          400, absl::StrCat("the request body is larger than the limit of ",
                            server_->options.max_body_bytes,
                            " bytes (--http-max-input-size)")));
    }
    if (ec == http::error::header_limit) {
      return Write(
          ErrorResponse(400, absl::StrCat("the request header is larger than ",
                                          kHeaderLimit, " bytes")));
    }
    Write(ErrorResponse(
        400, absl::StrCat("malformed HTTP ", what, ": ", ec.message())));
  }

  void Dispatch() {
    http::request<http::string_body> message = parser_->release();
    keep_alive_ = message.keep_alive();
    version_ = message.version();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    for (const auto& field : message) {
      const auto name = field.name_string();
      request.headers.emplace_back(
          absl::AsciiStrToLower(absl::string_view(name.data(), name.size())),
          std::string(field.value()));
    }
    coding_ = ChooseResponseCoding(message[http::field::accept_encoding]);
    absl::StatusOr<ContentCoding> coding =
        ParseContentEncoding(message[http::field::content_encoding]);
    if (!coding.ok()) {
      return Write(ErrorResponse(
          coding.status().code() == absl::StatusCode::kUnimplemented ? 415
                                                                     : 400,
          coding.status().message()));
    }
    if (*coding == ContentCoding::kIdentity) {
      request.body = std::move(message.body());
    } else {
      absl::StatusOr<std::string> body =
          Decompress(*coding, message.body(), server_->options.max_body_bytes);
      if (!body.ok()) return Write(ErrorResponse(400, body.status().message()));
      request.body = *std::move(body);
    }
    phase_ = Phase::kHandling;
    counted_ = true;
    server_->RequestStarted();
    auto disconnect = std::make_shared<ClientDisconnect>();
    request.disconnect = disconnect;
    server_->handler->Handle(std::move(request),
                             [gate = server_->gate, weak = weak_from_this()](
                                 HttpResponse response) mutable {
                               Deliver(gate, weak, std::move(response));
                             });
    WatchForClose(std::move(disconnect));
  }

  // While the request is handled the connection reads nothing; a client
  // that closes meanwhile makes the socket readable with nothing to read.
  // Readable with bytes (a pipelined request) ends the watch.
  void WatchForClose(std::shared_ptr<ClientDisconnect> disconnect) {
    const uint64_t request = ++requests_;
    socket_.async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this(), request,
         disconnect = std::move(disconnect)](beast::error_code ec) {
          // Once the answer is being written, readable means the next
          // request (whose bytes a read may already have taken).
          if (ec || request != self->requests_ ||
              self->phase_ != Phase::kHandling) {
            return;
          }
          beast::error_code available_ec;
          if (self->socket_.available(available_ec) == 0) disconnect->Fire();
        });
  }

  void Write(HttpResponse answer) {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kWriting;
    const bool keep_alive = keep_alive_ && !server_->stopping.load();
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(answer.status), version_);
    response->set(http::field::server, "coalesce");
    response->set(http::field::content_type, answer.content_type);
    for (auto& [name, value] : answer.headers) response->set(name, value);
    if (answer.compressible && coding_ != ContentCoding::kIdentity &&
        !answer.body.empty()) {
      response->set(http::field::content_encoding, ContentCodingName(coding_));
      response->body() = Compress(coding_, answer.body);
    } else {
      response->body() = std::move(answer.body);
    }
    response->keep_alive(keep_alive);
    response->prepare_payload();
    http::async_write(
        socket_, *response,
        [self = shared_from_this(), response, keep_alive](
            beast::error_code ec, size_t) { self->OnWritten(ec, keep_alive); });
  }

  void OnWritten(beast::error_code ec, bool keep_alive) {
    if (counted_) {
      counted_ = false;
      server_->RequestFinished();
    }
    if (ec || !keep_alive || server_->stopping.load()) return Close();
    ReadHeader();
  }

  // Starts the timer for the read under way; on expiry the read is
  // cancelled and completes with timed_out set.
  void Arm(std::chrono::milliseconds timeout) {
    const uint64_t generation = ++timer_generation_;
    timed_out_ = false;
    timer_.expires_after(timeout);
    timer_.async_wait(
        [self = shared_from_this(), generation](beast::error_code ec) {
          if (ec || generation != self->timer_generation_) return;
          if (self->phase_ != Phase::kHeader && self->phase_ != Phase::kBody) {
            return;
          }
          self->timed_out_ = true;
          beast::error_code ignored;
          self->socket_.cancel(ignored);
        });
  }

  // Stops the timer; whether it had fired.
  bool Disarm() {
    ++timer_generation_;
    timer_.cancel();
    return timed_out_;
  }

  HttpServer::Impl* const server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Phase phase_ = Phase::kHeader;
  uint64_t timer_generation_ = 0;
  bool timed_out_ = false;
  bool keep_alive_ = true;
  bool counted_ = false;   // a request handed to the handler, not yet written
  uint64_t requests_ = 0;  // handed to the handler so far
  unsigned version_ = 11;
  ContentCoding coding_ = ContentCoding::kIdentity;
};

absl::Status HttpServer::Impl::Listen() {
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-address '", options.address,
                     "' is not an IP address: ", ec.message()));
  }
  const tcp::endpoint endpoint(address,
                               static_cast<unsigned short>(options.port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.address, ":", options.port,
                     ": ", ec.message()));
  }
  port = acceptor.local_endpoint().port();
  return absl::OkStatus();
}

void HttpServer::Impl::Accept() {
  asio::io_context& context = *contexts[next_context++ % contexts.size()];
  acceptor.async_accept(context, [this](beast::error_code ec,
                                        tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open()) return;  // shutting down
      return Accept();  // e.g. out of descriptors: try the next one
    }
    const bool refused =
        connections.fetch_add(1) >= options.max_connections || stopping.load();
    auto session = std::make_shared<Session>(this, std::move(socket));
    Register(session);
    asio::dispatch(session->socket().get_executor(),
                   [session, refused] { session->Start(refused); });
    Accept();
  });
}

void HttpServer::Impl::Shutdown(std::chrono::milliseconds grace) {
  {
    absl::MutexLock lock(&mu);
    if (shut_down) return;
    shut_down = true;
  }
  stopping.store(true);
  asio::post(acceptor.get_executor(), [this] {
    beast::error_code ignored;
    acceptor.close(ignored);
  });
  auto for_each_session = [this](auto fn) {
    absl::MutexLock lock(&mu);
    for (auto& [raw, session] : sessions) {
      asio::post(session->socket().get_executor(),
                 [session = session, fn] { fn(*session); });
    }
  };
  for_each_session([](Session& s) { s.CloseIfIdle(); });
  {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(
                            +[](int* n) { return *n == 0; }, &inflight),
                        absl::FromChrono(grace));
  }
  {
    absl::MutexLock lock(&gate->mu);
    gate->open = false;
  }
  work.clear();
  for (auto& c : contexts) c->stop();
  for (std::thread& t : threads) t.join();
  threads.clear();
  std::map<Session*, std::shared_ptr<Session>> left;
  {
    absl::MutexLock lock(&mu);
    left.swap(sessions);
  }
  // Closed here (the threads are gone, so nothing else touches them), while
  // the io_contexts they belong to still exist; operations they had
  // pending hold them until the io_contexts go.
  for (auto& [raw, session] : left) session->Close();
  left.clear();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const Options& options, HttpHandler* handler) {
  auto impl = std::make_unique<Impl>(options, handler);
  if (absl::Status s = impl->Listen(); !s.ok()) return s;
  impl->Accept();
  for (auto& context : impl->contexts) {
    impl->threads.emplace_back([c = context.get()] { c->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }

int HttpServer::inflight() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->inflight;
}

void HttpServer::Shutdown(std::chrono::milliseconds grace) {
  impl_->Shutdown(grace);
}

}  // namespace coalesce
