#include "benchmarks/coalesce_bench/http_infer_sender.h"

#include <curl/curl.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/coalesce_bench/http_get.h"

namespace coalesce::bench {

struct HttpInferSender::Variant {
  RestInferBody body;
  curl_slist* headers = nullptr;  // owned; freed by the sender
};

struct HttpInferSender::Transfer {
  CURL* easy = nullptr;
  HttpAnswer answer;
  Done done;
};

namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

CURLM* Multi(void* multi) { return static_cast<CURLM*>(multi); }

}  // namespace

absl::StatusOr<std::unique_ptr<HttpInferSender>> HttpInferSender::Create(
    const Options& options, const RequestPool& pool) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::vector<Variant> variants;
  for (size_t i = 0; i < pool.size(); ++i) {
    absl::StatusOr<RestInferBody> body = BuildRestInferBody(pool.at(i));
    if (!body.ok()) {
      for (Variant& v : variants) curl_slist_free_all(v.headers);
      return body.status();
    }
    Variant v{*std::move(body), nullptr};
    const std::string length =
        absl::StrCat("Inference-Header-Content-Length: ", v.body.header_length);
    v.headers = curl_slist_append(v.headers, length.c_str());
    v.headers =
        curl_slist_append(v.headers, "Content-Type: application/octet-stream");
    // No "Expect: 100-continue" round trip before large bodies.
    v.headers = curl_slist_append(v.headers, "Expect:");
    variants.push_back(std::move(v));
  }
  return std::unique_ptr<HttpInferSender>(
      new HttpInferSender(options, std::move(variants)));
}

HttpInferSender::HttpInferSender(const Options& options,
                                 std::vector<Variant> variants)
    : options_(options),
      url_(absl::StrCat(
          absl::StrContains(options.url, "://") ? "" : "http://", options.url,
          RestModelPath(options.model, options.version), "/infer")),
      variants_(std::move(variants)),
      multi_(curl_multi_init()),
      thread_([this] { Loop(); }) {}

HttpInferSender::~HttpInferSender() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  curl_multi_wakeup(Multi(multi_));
  thread_.join();
  for (auto& t : transfers_) curl_easy_cleanup(t->easy);
  curl_multi_cleanup(Multi(multi_));
  for (Variant& v : variants_) curl_slist_free_all(v.headers);
}

void HttpInferSender::Send(int /*lane*/, Done done) {
  {
    absl::MutexLock lock(&mu_);
    queued_.push_back(std::move(done));
  }
  curl_multi_wakeup(Multi(multi_));
}

void HttpInferSender::Start(Transfer* t) {
  const Variant& v = variants_[next_.fetch_add(1) % variants_.size()];
  CURL* easy = t->easy;
  curl_easy_reset(easy);
  t->answer = HttpAnswer{};
  curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, v.body.body.data());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(v.body.body.size()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, v.headers);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t->answer.body);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
  curl_multi_add_handle(Multi(multi_), easy);
}

void HttpInferSender::Finish(Transfer* t, int curl_code) {
  curl_multi_remove_handle(Multi(multi_), t->easy);
  absl::Status status;
  if (curl_code == CURLE_OPERATION_TIMEDOUT) {
    status = absl::DeadlineExceededError(
        absl::StrCat("no answer within ", options_.timeout.count(), " ms"));
  } else if (curl_code != CURLE_OK) {
    status = absl::UnavailableError(
        curl_easy_strerror(static_cast<CURLcode>(curl_code)));
  } else {
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->answer.status);
    status = StatusOfHttpAnswer(t->answer);
  }
  Done done = std::move(t->done);
  t->answer.body.clear();
  idle_.push_back(t);
  done(status);
}

void HttpInferSender::Loop() {
  int running = 0;
  while (true) {
    std::deque<Done> starting;
    bool stop;
    {
      absl::MutexLock lock(&mu_);
      starting.swap(queued_);
      stop = stop_;
    }
    if (stop && starting.empty() && running == 0) return;
    for (Done& done : starting) {
      if (idle_.empty()) {
        transfers_.push_back(std::make_unique<Transfer>());
        transfers_.back()->easy = curl_easy_init();
        idle_.push_back(transfers_.back().get());
      }
      Transfer* t = idle_.back();
      idle_.pop_back();
      t->done = std::move(done);
      Start(t);
    }
    curl_multi_perform(Multi(multi_), &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(Multi(multi_), &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      Finish(t, msg->data.result);
    }
    curl_multi_poll(Multi(multi_), nullptr, 0, 100, nullptr);
  }
}

}  // namespace coalesce::bench
