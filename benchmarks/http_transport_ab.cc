// http-transport-ab: the REST frontend of coalesce-server (HttpFrontend on
// KServeService over a ModelManager, as in the server) behind a second HTTP
// library, cpp-httplib (Debian's libcpp-httplib-dev 0.11: a thread pool in
// which each keep-alive connection holds a thread, the handler blocking until
// the batcher answers). benchmarks/http_vs_grpc.py --transports runs
// perf_analyzer against it and against coalesce-server's own HTTP port
// (Boost.Beast, asynchronous): the measurement behind the choice of library
// in docs/server.md. Not a server to deploy: no limits, no shutdown.
//
// Usage: http-transport-ab --model-repository DIR --port N [--threads N]
#include <cstdio>
#include <future>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "base/command_line.h"
#include "batching/clock.h"
#include "httplib.h"
#include "server/http_frontend.h"
#include "server/kserve_service.h"
#include "server/model_manager.h"
#include "server/server_options.h"

namespace {

using coalesce::HttpRequest;
using coalesce::HttpResponse;

// One request through the frontend; blocks this pool thread until answered.
void Serve(coalesce::HttpFrontend* frontend, const httplib::Request& in,
           httplib::Response& out) {
  HttpRequest request;
  request.method = in.method;
  request.target = in.target;
  for (const auto& [name, value] : in.headers) {
    request.headers.emplace_back(absl::AsciiStrToLower(name), value);
  }
  request.body = in.body;
  std::promise<HttpResponse> answered;
  std::future<HttpResponse> answer = answered.get_future();
  frontend->Handle(std::move(request), [&answered](HttpResponse r) mutable {
    answered.set_value(std::move(r));
  });
  HttpResponse r = answer.get();
  out.status = r.status;
  for (const auto& [name, value] : r.headers) out.set_header(name, value);
  out.set_content(std::move(r.body), r.content_type.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string repository;
  int port = 0;
  int threads = 8;
  auto app = coalesce::MakeCommandLine(
      "Usage: http-transport-ab --model-repository DIR --port N [--threads N]");
  app->add_option("--model-repository", repository, "Model repository.")
      ->required();
  app->add_option("--port", port, "Port on 127.0.0.1.")->required();
  app->add_option("--threads", threads, "cpp-httplib's pool threads.");
  if (auto code = coalesce::ParseCommandLineOrExit(*app, argc, argv,
                                                   "http-transport-ab", 2)) {
    return *code;
  }
  coalesce::ModelManager manager(repository, coalesce::RealClock());
  if (absl::Status s = manager.LoadAll(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  coalesce::ServerOptions options;
  coalesce::KServeService service(&manager, coalesce::RealClock(), options);
  service.set_ready(true);
  coalesce::HttpFrontend frontend(&service, coalesce::ProtocolRestrictions());
  httplib::Server server;
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(threads);
  };
  server.set_keep_alive_max_count(1 << 30);
  // As Beast's answers go out in one write; without it a response's header
  // and body meet Nagle and the client's delayed ACK (40 ms a request).
  server.set_tcp_nodelay(true);
  auto handler = [&frontend](const httplib::Request& in,
                             httplib::Response& out) {
    Serve(&frontend, in, out);
  };
  server.Get(".*", handler);
  server.Post(".*", handler);
  std::printf("HTTP (cpp-httplib, %d threads) on http://127.0.0.1:%d/v2\n",
              threads, port);
  std::fflush(stdout);
  return server.listen("127.0.0.1", port) ? 0 : 1;
}
