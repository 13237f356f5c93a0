// HttpGet: the body of one HTTP GET, through libcurl. coalesce-bench reads
// coalesce-server's Prometheus endpoint with it (--metrics-url). HttpCall:
// one request of any method with its status, for the KServe v2 REST
// control calls (-i http). Plain http only (the endpoints have no TLS), no
// redirects, bounded by a timeout. Thread-safe (each call has its own curl
// handle).
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_GET_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_GET_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace coalesce::bench {

// The body of a 200 answer to GET `url` ("http://host:port/path" or
// "host:port/path"; no path means /metrics). InvalidArgument for a URL that
// does not parse, names no port, or is not http; Unavailable when the server
// cannot be reached within `timeout` or answers another status.
absl::StatusOr<std::string> HttpGet(const std::string& url,
                                    std::chrono::milliseconds timeout);

struct HttpAnswer {
  long status = 0;
  std::string body;
};

// `method` `path` on the server at `server` ("host:port" or
// "http://host:port"), with `body` when not empty. Unavailable when the
// server cannot be reached within `timeout`; any HTTP status is an answer.
absl::StatusOr<HttpAnswer> HttpCall(const std::string& server,
                                    const std::string& method,
                                    const std::string& path,
                                    const std::string& body,
                                    std::chrono::milliseconds timeout);

// The absl code of a KServe REST error status (400 InvalidArgument, 404
// NotFound, 503 Unavailable, ...), with the message of its {"error"} body.
absl::Status StatusOfHttpAnswer(const HttpAnswer& answer);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_GET_H_
