// HttpGet: the body of one HTTP GET, through libcurl. coalesce-bench reads
// coalesce-server's Prometheus endpoint with it (--metrics-url). Plain http
// only (the endpoint has no TLS), no redirects, bounded by a timeout.
// Thread-safe (each call has its own curl handle).
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

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_GET_H_
