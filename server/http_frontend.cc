#include "server/http_frontend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "server/cancel_notifier.h"
#include "server/client_disconnect.h"
#include "server/response_sinks.h"
#include "server/rest_infer.h"
#include "server/rest_messages.h"

namespace coalesce {

using Json = nlohmann::json;

namespace {

enum class Endpoint {
  kServerMetadata,
  kLive,
  kReady,
  kModelMetadata,
  kModelReady,
  kModelConfig,
  kModelStats,  // all models when the route names none
  kInfer,
  kIndex,
  kLoad,
  kUnload,
  kStatus,  // shared memory, system or CUDA
  kRegister,
  kUnregister,
  kTrace,
  kLogging,
};

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

HttpResponse JsonResponse(const Json& json) {
  HttpResponse response;
  response.body = Dump(json);
  return response;
}

// 200 with an empty body when `ok`, else 400: Triton's readiness answers.
HttpResponse Readiness(bool ok) {
  HttpResponse response;
  response.status = ok ? 200 : 400;
  return response;
}

HttpResponse Empty(const absl::Status& status) {
  if (!status.ok()) return HttpErrorResponse(status);
  return HttpResponse{};
}

// `text` with its %XX escapes decoded; nullopt for a malformed escape.
std::optional<std::string> PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    for (int k = 1; k <= 2; ++k) {
      const char c = text[i + k];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        value |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        value |= c - 'A' + 10;
      } else {
        return std::nullopt;
      }
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

// The decoded segments of the target's path (the query left out).
absl::StatusOr<std::vector<std::string>> PathOf(std::string_view target) {
  const absl::string_view path(target.data(),
                               std::min(target.size(), target.find('?')));
  std::vector<std::string> segments;
  for (absl::string_view raw : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    std::optional<std::string> segment =
        PercentDecoded(std::string_view(raw.data(), raw.size()));
    if (!segment) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed percent-escape in the path '", path, "'"));
    }
    segments.push_back(*std::move(segment));
  }
  return segments;
}

}  // namespace

struct HttpFrontend::Route {
  Endpoint endpoint = Endpoint::kServerMetadata;
  std::string method;  // "GET" or "POST"
  ProtocolGroup group = ProtocolGroup::kMetadata;
  std::string model;    // model routes
  std::string version;  // empty: the latest
  std::string region;   // shared memory routes; empty: all
  bool cuda = false;    // CUDA shared memory rather than system
};

namespace {

using Route = HttpFrontend::Route;

Route MakeRoute(Endpoint endpoint, const char* method, ProtocolGroup group,
                std::string model = "", std::string version = "") {
  Route r;
  r.endpoint = endpoint;
  r.method = method;
  r.group = group;
  r.model = std::move(model);
  r.version = std::move(version);
  return r;
}

// The model routes after "/v2/models/{model}[/versions/{version}]".
std::optional<Route> ModelRoute(std::string model, std::string version,
                                const std::vector<std::string>& rest) {
  Route r = MakeRoute(Endpoint::kModelMetadata, "GET", ProtocolGroup::kMetadata,
                      std::move(model), std::move(version));
  if (rest.empty()) return r;
  if (rest.size() == 2 && rest[0] == "trace" && rest[1] == "setting") {
    r.endpoint = Endpoint::kTrace;
    r.group = ProtocolGroup::kTrace;
    return r;
  }
  if (rest.size() != 1) return std::nullopt;
  if (rest[0] == "ready") {
    r.endpoint = Endpoint::kModelReady;
    r.group = ProtocolGroup::kHealth;
  } else if (rest[0] == "config") {
    r.endpoint = Endpoint::kModelConfig;
    r.group = ProtocolGroup::kModelConfig;
  } else if (rest[0] == "stats") {
    r.endpoint = Endpoint::kModelStats;
    r.group = ProtocolGroup::kStatistics;
  } else if (rest[0] == "infer") {
    r.endpoint = Endpoint::kInfer;
    r.method = "POST";
    r.group = ProtocolGroup::kInference;
  } else {
    return std::nullopt;
  }
  return r;
}

// "/v2/{systemsharedmemory,cudasharedmemory}/...".
std::optional<Route> SharedMemoryRoute(bool cuda,
                                       const std::vector<std::string>& p) {
  Route r = MakeRoute(Endpoint::kStatus, "GET", ProtocolGroup::kSharedMemory);
  r.cuda = cuda;
  size_t at = 2;
  if (p.size() >= 4 && p[2] == "region") {
    r.region = p[3];
    at = 4;
  }
  if (p.size() != at + 1) return std::nullopt;
  if (p[at] == "status") return r;
  r.method = "POST";
  if (p[at] == "unregister") {
    r.endpoint = Endpoint::kUnregister;
    return r;
  }
  if (p[at] == "register" && at == 4) {
    r.endpoint = Endpoint::kRegister;
    return r;
  }
  return std::nullopt;
}

// The route of a path that starts with "v2"; nullopt when there is none.
std::optional<Route> Resolve(const std::vector<std::string>& p) {
  const size_t n = p.size();
  if (n == 1) {
    return MakeRoute(Endpoint::kServerMetadata, "GET",
                     ProtocolGroup::kMetadata);
  }
  if (p[1] == "health" && n == 3 && (p[2] == "live" || p[2] == "ready")) {
    return MakeRoute(p[2] == "live" ? Endpoint::kLive : Endpoint::kReady, "GET",
                     ProtocolGroup::kHealth);
  }
  if (p[1] == "models" && n == 3 && p[2] == "stats") {
    return MakeRoute(Endpoint::kModelStats, "GET", ProtocolGroup::kStatistics);
  }
  if (p[1] == "models" && n >= 3) {
    if (n >= 5 && p[3] == "versions") {
      return ModelRoute(p[2], p[4], {p.begin() + 5, p.end()});
    }
    return ModelRoute(p[2], "", {p.begin() + 3, p.end()});
  }
  if (p[1] == "repository" && n == 3 && p[2] == "index") {
    return MakeRoute(Endpoint::kIndex, "POST", ProtocolGroup::kModelRepository);
  }
  if (p[1] == "repository" && n == 5 && p[2] == "models" &&
      (p[4] == "load" || p[4] == "unload")) {
    return MakeRoute(p[4] == "load" ? Endpoint::kLoad : Endpoint::kUnload,
                     "POST", ProtocolGroup::kModelRepository, p[3]);
  }
  if (p[1] == "systemsharedmemory" || p[1] == "cudasharedmemory") {
    return SharedMemoryRoute(p[1] == "cudasharedmemory", p);
  }
  if (p[1] == "trace" && n == 3 && p[2] == "setting") {
    return MakeRoute(Endpoint::kTrace, "GET", ProtocolGroup::kTrace);
  }
  if (p[1] == "logging" && n == 2) {
    return MakeRoute(Endpoint::kLogging, "GET", ProtocolGroup::kLogging);
  }
  return std::nullopt;
}

// Shared memory status as Triton writes it: a JSON array of the regions.
template <typename StatusResponse>
HttpResponse RegionList(const absl::Status& status,
                        const StatusResponse& response) {
  if (!status.ok()) return HttpErrorResponse(status);
  Json regions = Json::array();
  Json all = ProtoJson(response);
  if (all.contains("regions")) {
    for (auto& [name, region] : all["regions"].items()) {
      regions.push_back(region);
    }
  }
  return JsonResponse(regions);
}

// A request naming the route's model and version.
template <typename Request>
Request ModelRequest(const Route& route) {
  Request req;
  req.set_name(route.model);
  req.set_version(route.version);
  return req;
}

// Answers an inference request once the batcher finishes it.
class HttpInferSink : public ProtoResponseSink {
 public:
  HttpInferSink(RestInferRequest request, HttpReply reply,
                std::shared_ptr<const ClientDisconnect> disconnect)
      : ProtoResponseSink(&response_),
        request_(std::move(request)),
        reply_(std::move(reply)),
        disconnect_(std::move(disconnect)) {}

  const inference::ModelInferRequest& proto() const { return request_.proto; }

  void Finish(const absl::Status& result) override {
    const absl::Status status = Finalize(result);
    if (!status.ok()) return std::move(reply_)(HttpErrorResponse(status));
    absl::StatusOr<RestInferResponse> formatted =
        FormatRestInfer(response_, request_);
    if (!formatted.ok()) {
      return std::move(reply_)(HttpErrorResponse(formatted.status()));
    }
    HttpResponse answer;
    answer.compressible = true;
    if (!formatted->binary.empty()) {
      answer.content_type = "application/octet-stream";
      answer.headers.emplace_back("Inference-Header-Content-Length",
                                  std::to_string(formatted->json.size()));
    }
    answer.body = std::move(formatted->json);
    answer.body.append(formatted->binary);
    std::move(reply_)(std::move(answer));
  }

  // HTTP/1.1 offers no cancellation short of closing the connection.
  bool IsCancelled() const override {
    return disconnect_ != nullptr && disconnect_->fired();
  }

 private:
  inference::ModelInferResponse response_;
  RestInferRequest request_;
  HttpReply reply_;
  const std::shared_ptr<const ClientDisconnect> disconnect_;
};

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return 403;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return 503;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
      return 500;
    default:
      return 400;
  }
}

HttpResponse HttpErrorResponse(const absl::Status& status) {
  HttpResponse response;
  response.status = HttpStatusOf(status.code());
  response.body = Dump(Json{{"error", std::string(status.message())}});
  return response;
}

void HttpFrontend::Handle(HttpRequest request, HttpReply reply) {
  absl::StatusOr<std::vector<std::string>> path = PathOf(request.target);
  if (!path.ok()) return std::move(reply)(HttpErrorResponse(path.status()));
  std::optional<Route> route;
  if (!path->empty() && (*path)[0] == "v2") route = Resolve(*path);
  if (!route) {
    return std::move(reply)(HttpErrorResponse(absl::NotFoundError(absl::StrCat(
        "no KServe v2 endpoint at '",
        request.target.substr(0, request.target.find('?')), "'"))));
  }
  if (request.method != route->method) {
    HttpResponse refused = HttpErrorResponse(absl::InvalidArgumentError(
        absl::StrCat(request.method, " is not allowed on '", request.target,
                     "' (", route->method, " is)")));
    refused.status = 405;
    refused.headers.emplace_back("Allow", route->method);
    return std::move(reply)(std::move(refused));
  }
  absl::Status allowed = restrictions_.Check(
      route->group,
      [&request](absl::string_view key) -> std::optional<absl::string_view> {
        auto value = request.Header(std::string_view(key.data(), key.size()));
        if (!value) return std::nullopt;
        return absl::string_view(value->data(), value->size());
      });
  if (!allowed.ok()) {
    HttpResponse refused = HttpErrorResponse(allowed);
    refused.status = 403;
    return std::move(reply)(std::move(refused));
  }
  if (route->endpoint == Endpoint::kInfer) {
    return Infer(*route, std::move(request), std::move(reply));
  }
  if (route->endpoint == Endpoint::kLoad ||
      route->endpoint == Endpoint::kUnload) {
    repository_worker_.Post([this, route = *std::move(route),
                             request = std::move(request),
                             reply = std::move(reply)]() mutable {
      std::move(reply)(Answer(route, request));
    });
    return;
  }
  std::move(reply)(Answer(*route, request));
}

HttpResponse HttpFrontend::Answer(const Route& route,
                                  const HttpRequest& request) {
  switch (route.endpoint) {
    case Endpoint::kLive:
      return Readiness(service_->ServerLive());
    case Endpoint::kReady:
      return Readiness(service_->ServerReady());
    case Endpoint::kModelReady:
      return Readiness(service_->ModelReady(route.model, route.version));
    case Endpoint::kServerMetadata: {
      inference::ServerMetadataResponse resp;
      service_->ServerMetadata(&resp);
      return JsonResponse(ProtoJson(resp));
    }
    case Endpoint::kModelMetadata: {
      inference::ModelMetadataResponse resp;
      absl::Status s = service_->ModelMetadata(
          ModelRequest<inference::ModelMetadataRequest>(route), &resp);
      return s.ok() ? JsonResponse(ProtoJson(resp)) : HttpErrorResponse(s);
    }
    case Endpoint::kModelConfig: {
      inference::ModelConfigResponse resp;
      absl::Status s = service_->ModelConfig(
          ModelRequest<inference::ModelConfigRequest>(route), &resp);
      return s.ok() ? JsonResponse(ProtoJson(resp.config()))
                    : HttpErrorResponse(s);
    }
    case Endpoint::kModelStats: {
      inference::ModelStatisticsResponse resp;
      absl::Status s = service_->ModelStatistics(
          ModelRequest<inference::ModelStatisticsRequest>(route), &resp);
      return s.ok() ? JsonResponse(ProtoJson(resp)) : HttpErrorResponse(s);
    }
    case Endpoint::kIndex: {
      auto req = ParseIndexBody(request.body);
      if (!req.ok()) return HttpErrorResponse(req.status());
      inference::RepositoryIndexResponse resp;
      service_->RepositoryIndex(*req, &resp);
      Json models = ProtoJson(resp);
      return JsonResponse(models.contains("models") ? models["models"]
                                                    : Json::array());
    }
    case Endpoint::kLoad: {
      auto req = ParseLoadBody(route.model, request.body);
      if (!req.ok()) return HttpErrorResponse(req.status());
      return Empty(service_->RepositoryModelLoad(*req));
    }
    case Endpoint::kUnload: {
      auto req = ParseUnloadBody(route.model, request.body);
      if (!req.ok()) return HttpErrorResponse(req.status());
      return Empty(service_->RepositoryModelUnload(*req));
    }
    case Endpoint::kStatus: {
      if (route.cuda) {
        inference::CudaSharedMemoryStatusRequest req;
        req.set_name(route.region);
        inference::CudaSharedMemoryStatusResponse resp;
        return RegionList(service_->CudaSharedMemoryStatus(req, &resp), resp);
      }
      inference::SystemSharedMemoryStatusRequest req;
      req.set_name(route.region);
      inference::SystemSharedMemoryStatusResponse resp;
      return RegionList(service_->SystemSharedMemoryStatus(req, &resp), resp);
    }
    case Endpoint::kRegister: {
      if (route.cuda) {
        auto req = ParseCudaRegisterBody(route.region, request.body);
        if (!req.ok()) return HttpErrorResponse(req.status());
        return Empty(service_->CudaSharedMemoryRegister(*req));
      }
      auto req = ParseSystemRegisterBody(route.region, request.body);
      if (!req.ok()) return HttpErrorResponse(req.status());
      return Empty(service_->SystemSharedMemoryRegister(*req));
    }
    case Endpoint::kUnregister: {
      if (route.cuda) {
        inference::CudaSharedMemoryUnregisterRequest req;
        req.set_name(route.region);
        service_->CudaSharedMemoryUnregister(req);
      } else {
        inference::SystemSharedMemoryUnregisterRequest req;
        req.set_name(route.region);
        service_->SystemSharedMemoryUnregister(req);
      }
      return HttpResponse{};
    }
    case Endpoint::kTrace:
    case Endpoint::kLogging:
    case Endpoint::kInfer:
      break;
  }
  return HttpErrorResponse(absl::UnimplementedError(
      "trace and log settings are not supported (as on gRPC)"));
}

void HttpFrontend::Infer(const Route& route, HttpRequest request,
                         HttpReply reply) {
  std::optional<size_t> header_length;
  if (auto value = request.Header("inference-header-content-length")) {
    size_t n = 0;
    if (!absl::SimpleAtoi(absl::string_view(value->data(), value->size()),
                          &n)) {
      return std::move(reply)(HttpErrorResponse(absl::InvalidArgumentError(
          absl::StrCat("Inference-Header-Content-Length '",
                       absl::string_view(value->data(), value->size()),
                       "' is not a byte count"))));
    }
    header_length = n;
  }
  absl::StatusOr<RestInferRequest> parsed =
      ParseRestInfer(request.body, header_length, route.model, route.version);
  if (!parsed.ok()) return std::move(reply)(HttpErrorResponse(parsed.status()));
  auto sink = std::make_unique<HttpInferSink>(
      *std::move(parsed), std::move(reply), request.disconnect);
  const inference::ModelInferRequest& proto = sink->proto();
  std::shared_ptr<ServedModel> model = service_->handler()->Submit(
      proto, std::chrono::system_clock::time_point::max(), std::move(sink));
  // A client gone while its request is queued: its batcher answers it (and
  // forgets it) at once instead of when it next forms a batch.
  if (model != nullptr && request.disconnect != nullptr) {
    auto notifier = std::make_shared<CancelNotifier>();
    notifier->Add(model);
    request.disconnect->OnFire([notifier] { notifier->NotifyAll(); });
  }
}

}  // namespace coalesce
