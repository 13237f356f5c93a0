// HttpServer: an HTTP/1.1 server (Boost.Beast over Asio) that hands each
// request to an HttpHandler and writes the answer the handler gives, from
// whichever thread gives it. Knows nothing of KServe (http_frontend.h routes).
//
// What the transport owns, so that every route gets it:
// - Keep-alive connections, one request at a time each; "Expect:
//   100-continue" answered; chunked request bodies accepted.
// - Limits: a request body larger than `max_body_bytes` (by its header, as
//   it arrives, or once decompressed) is answered 400 and the connection
//   closed; past `max_connections` open connections a new one is answered
//   503 and closed; a request whose body does not arrive within
//   `read_timeout` is answered 400 (a client that is slow, or whose
//   Content-Length lies) and closed; an idle keep-alive connection is
//   closed after `idle_timeout`. Malformed HTTP is answered 400 and closed.
// - A client that closes its connection while its request is handled fires
//   the request's ClientDisconnect.
// - Content codings: a request's gzip/deflate Content-Encoding is undone
//   before the handler sees the body (415 for another coding); a response
//   the handler marks compressible is compressed when the request's
//   Accept-Encoding asks for gzip or deflate.
// Error bodies the transport writes are KServe's {"error": "..."}.
//
// Threads: `threads` run the connections; Handle is called on one of them
// and must not block for long: that thread serves other connections too
// (HttpFrontend runs model loads on a thread of its own).
#ifndef COALESCE_SERVER_HTTP_SERVER_H_
#define COALESCE_SERVER_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "server/client_disconnect.h"

namespace coalesce {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent, not decoded
  std::vector<std::pair<std::string, std::string>> headers;  // names lower
  std::string body;  // with its Content-Encoding undone
  // Fires when the client closes the connection before the answer is
  // written (client_disconnect.h). Set by the transport on every request.
  std::shared_ptr<ClientDisconnect> disconnect;

  // The first header of that (lower-case) name.
  std::optional<std::string_view> Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The server may apply the content coding the request's Accept-Encoding
  // asks for. Triton compresses inference answers only, and some clients
  // (tritonclient's aiohttp client, which always sends Accept-Encoding)
  // decode no other answer.
  bool compressible = false;
};

// Answers a request: called exactly once, from any thread.
using HttpReply = absl::AnyInvocable<void(HttpResponse) &&>;

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  virtual void Handle(HttpRequest request, HttpReply reply) = 0;
};

class HttpServer {
 public:
  struct Options {
    std::string address = "0.0.0.0";
    int port = 8000;  // 0: any free port
    int threads = 8;
    size_t max_body_bytes = size_t{64} << 20;
    int max_connections = 1024;
    std::chrono::milliseconds read_timeout{60000};
    std::chrono::milliseconds idle_timeout{60000};
  };

  // Binds and starts serving. Unavailable when the address cannot be bound.
  // REQUIRES: `handler` outlives the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const Options& options, HttpHandler* handler);

  // Shutdown(0).
  ~HttpServer();

  int port() const;
  // Requests handed to the handler and not yet answered and written.
  int inflight() const;

  // Stops accepting, closes idle connections, answers what is in flight
  // with Connection: close for up to `grace`, then closes every connection
  // and stops the threads. A reply that comes later is dropped. Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_HTTP_SERVER_H_
