#include "benchmarks/coalesce_bench/http_get.h"

#include <curl/curl.h>

#include <memory>

#include "absl/base/call_once.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace coalesce::bench {
namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlStringDeleter {
  void operator()(char* s) const { curl_free(s); }
};
using CurlString = std::unique_ptr<char, CurlStringDeleter>;

void GlobalInit() {
  static absl::once_flag once;
  absl::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlString Part(CURLU* url, CURLUPart part) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, 0) != CURLUE_OK) return nullptr;
  return CurlString(value);
}

// `text` as a full http URL ("http://" assumed, "/metrics" when no path).
absl::StatusOr<std::string> NormalizeUrl(const std::string& text) {
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (url == nullptr) return absl::InternalError("curl_url failed");
  // curl would read "127.0.0.1:8002" as a scheme and a path.
  const std::string full_text =
      absl::StrContains(text, "://") ? text : absl::StrCat("http://", text);
  if (curl_url_set(url.get(), CURLUPART_URL, full_text.c_str(), 0) !=
      CURLUE_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics URL '", text, "' does not parse"));
  }
  CurlString scheme = Part(url.get(), CURLUPART_SCHEME);
  if (scheme == nullptr || std::string(scheme.get()) != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics URL '", text, "' is not http"));
  }
  if (Part(url.get(), CURLUPART_PORT) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics URL '", text, "' needs HOST:PORT"));
  }
  CurlString path = Part(url.get(), CURLUPART_PATH);
  if (path == nullptr || std::string(path.get()) == "/") {
    curl_url_set(url.get(), CURLUPART_PATH, "/metrics", 0);
  }
  CurlString full = Part(url.get(), CURLUPART_URL);
  if (full == nullptr) return absl::InternalError("curl_url_get failed");
  return std::string(full.get());
}

size_t Append(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

}  // namespace

absl::StatusOr<std::string> HttpGet(const std::string& text,
                                    std::chrono::milliseconds timeout) {
  GlobalInit();
  absl::StatusOr<std::string> url = NormalizeUrl(text);
  if (!url.ok()) return url.status();
  std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url->c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS,
                   static_cast<long>(timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  const CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat("GET ", *url, ": ", curl_easy_strerror(code)));
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    return absl::UnavailableError(
        absl::StrCat("GET ", *url, " answered HTTP ", status));
  }
  return body;
}

absl::StatusOr<HttpAnswer> HttpCall(const std::string& server,
                                    const std::string& method,
                                    const std::string& path,
                                    const std::string& body,
                                    std::chrono::milliseconds timeout) {
  GlobalInit();
  const std::string url = absl::StrCat(
      absl::StrContains(server, "://") ? "" : "http://", server, path);
  std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  HttpAnswer answer;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty()) {
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS,
                   static_cast<long>(timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer.body);
  const CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat(method, " ", url, ": ", curl_easy_strerror(code)));
  }
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

absl::Status StatusOfHttpAnswer(const HttpAnswer& answer) {
  if (answer.status == 200) return absl::OkStatus();
  nlohmann::json json =
      nlohmann::json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  std::string message =
      json.is_object() && json.contains("error") && json["error"].is_string()
          ? json["error"].get<std::string>()
          : answer.body;
  message = absl::StrCat("HTTP ", answer.status, ": ", message);
  switch (answer.status) {
    case 400:
      return absl::InvalidArgumentError(message);
    case 403:
      return absl::PermissionDeniedError(message);
    case 404:
      return absl::NotFoundError(message);
    case 500:
      return absl::InternalError(message);
    case 501:
      return absl::UnimplementedError(message);
    case 503:
      return absl::UnavailableError(message);
    default:
      return absl::UnknownError(message);
  }
}

}  // namespace coalesce::bench
