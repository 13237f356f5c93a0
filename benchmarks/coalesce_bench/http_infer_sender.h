// HttpInferSender: InferSender over the KServe v2 REST protocol (-i http),
// with Triton's binary tensor data extension, as perf_analyzer sends over
// HTTP by default.
//
// One thread drives every transfer through a libcurl multi handle, so any
// number of requests may be outstanding (closed and open loop alike) with
// no thread per request; the multi handle keeps the connections alive and
// reuses them (HTTP/1.1: one request at a time per connection, so the
// number of connections follows the number outstanding; lanes mean
// nothing here). Each pool variant's body is built once (rest_infer_body.h)
// and sent without a copy. A non-200 answer completes with the code of its
// HTTP status (http_get.h); a transfer past the timeout with
// DEADLINE_EXCEEDED; a connection failure with UNAVAILABLE.
// Thread-safe. Destroy it only after every started request has completed.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_INFER_SENDER_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_INFER_SENDER_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "benchmarks/coalesce_bench/infer_sender.h"
#include "benchmarks/coalesce_bench/request_pool.h"
#include "benchmarks/coalesce_bench/rest_infer_body.h"

namespace coalesce::bench {

class HttpInferSender : public InferSender {
 public:
  struct Options {
    std::string url;  // host:port of the HTTP endpoint
    std::string model;
    std::string version;  // empty: latest
    std::chrono::milliseconds timeout{30000};
  };

  // InvalidArgument when a request of the pool has no REST form.
  static absl::StatusOr<std::unique_ptr<HttpInferSender>> Create(
      const Options& options, const RequestPool& pool);
  ~HttpInferSender() override;

  void Send(int lane, Done done) override;

 private:
  struct Variant;
  struct Transfer;

  HttpInferSender(const Options& options, std::vector<Variant> variants);
  void Loop();
  void Start(Transfer* transfer);
  void Finish(Transfer* transfer, int curl_code);

  const Options options_;
  const std::string url_;  // the infer call's full URL
  std::vector<Variant> variants_;
  std::atomic<uint64_t> next_{0};
  void* multi_;                                       // CURLM*
  std::vector<std::unique_ptr<Transfer>> transfers_;  // loop thread only
  std::vector<Transfer*> idle_;                       // loop thread only

  absl::Mutex mu_;
  std::deque<Done> queued_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once everything above is built
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_INFER_SENDER_H_
