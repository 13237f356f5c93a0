// HttpFrontend: the KServe v2 REST protocol as Triton serves it over HTTP
// (docs/server.md lists every endpoint). Routes each request of the
// HttpServer to the wire-neutral KServeService that the gRPC frontend uses
// too, checks --http-restricted-api, and writes Triton's bodies and status
// codes: 200 with the JSON answer; errors as {"error": "..."} with the
// status HttpStatusOf gives; readiness as 200 (ready) or 400 (not ready),
// with an empty body; 404 for an unknown path; 405 for a known path asked
// with the wrong method; 403 for a restricted API without its header.
//
// Inference bodies go through ParseRestInfer into the same ModelInferRequest
// a gRPC client sends, to the same InferHandler; the answer is written by
// FormatRestInfer when the batcher finishes the request, from the thread
// that finishes it. Repository loads and unloads, which take as long as the
// model's load, run one at a time on the frontend's own thread and answer
// from there: an HTTP io thread serves every connection assigned to it, and
// a load on it would stall them all. The rest answers at once, on the
// calling thread. Thread-safe.
#ifndef COALESCE_SERVER_HTTP_FRONTEND_H_
#define COALESCE_SERVER_HTTP_FRONTEND_H_

#include <utility>

#include "absl/status/status.h"
#include "server/http_server.h"
#include "server/kserve_service.h"
#include "server/protocol_restrictions.h"
#include "server/serial_worker.h"

namespace coalesce {

// Triton's HTTP status for an error: 400 for a bad request (invalid
// argument, already exists, failed precondition, out of range, cancelled,
// unknown), 404 not found, 403 permission denied, 501 unimplemented, 503
// unavailable (a full queue, a request past its timeout, a model not
// ready, a restricted protocol's missing header aside), 500 internal.
int HttpStatusOf(absl::StatusCode code);

// The KServe error answer for `status` (not OK).
HttpResponse HttpErrorResponse(const absl::Status& status);

class HttpFrontend : public HttpHandler {
 public:
  // REQUIRES: `service` outlives the frontend.
  HttpFrontend(KServeService* service, ProtocolRestrictions restrictions)
      : service_(service), restrictions_(std::move(restrictions)) {}

  void Handle(HttpRequest request, HttpReply reply) override;

  // An endpoint with its path parameters (http_frontend.cc).
  struct Route;

 private:
  // The answer to `request`, resolved to `route`; inference answers
  // through `reply` later, the rest at once.
  HttpResponse Answer(const Route& route, const HttpRequest& request);
  void Infer(const Route& route, HttpRequest request, HttpReply reply);

  KServeService* const service_;
  const ProtocolRestrictions restrictions_;
  SerialWorker repository_worker_;  // loads and unloads
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_HTTP_FRONTEND_H_
