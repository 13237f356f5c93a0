// Routing, status codes and bodies of the REST frontend, over a real
// KServeService on an empty repository (no socket: requests are handed to
// HttpFrontend::Handle directly). Inference and models end to end are in
// tests/e2e/test_http.py.
#include "server/http_frontend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "batching/clock.h"
#include "nlohmann/json.hpp"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class HttpFrontendTest : public ::testing::Test {
 protected:
  HttpFrontendTest() {
    char pattern[] = "/tmp/coalesce-http-frontend-XXXXXX";
    repo_ = mkdtemp(pattern);
    manager_ = std::make_unique<ModelManager>(repo_, RealClock());
    ServerOptions options;
    options.model_control_mode = ModelControlMode::kExplicit;
    service_ =
        std::make_unique<KServeService>(manager_.get(), RealClock(), options);
    service_->set_ready(true);
    ProtocolRestrictions restrictions;
    EXPECT_TRUE(restrictions.Add("model-repository:admin-key=secret").ok());
    frontend_ =
        std::make_unique<HttpFrontend>(service_.get(), std::move(restrictions));
  }
  ~HttpFrontendTest() override {
    frontend_.reset();
    service_.reset();
    manager_.reset();
    std::filesystem::remove_all(repo_);
  }

  HttpResponse Call(
      const std::string& method, const std::string& target,
      const std::string& body = "",
      std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpRequest request;
    request.method = method;
    request.target = target;
    request.body = body;
    request.headers = std::move(headers);
    std::optional<HttpResponse> answer;
    absl::Notification answered;
    frontend_->Handle(std::move(request),
                      [this, &answer, &answered](HttpResponse r) {
                        answer = std::move(r);
                        last_answer_thread_ = std::this_thread::get_id();
                        answered.Notify();
                      });
    // Repository loads answer from the frontend's thread; the rest at once.
    EXPECT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(20)))
        << "no answer";
    return answer.value_or(HttpResponse{});
  }

  static std::string Error(const HttpResponse& r) {
    Json json = Json::parse(r.body, nullptr, false);
    return json.is_object() && json.contains("error")
               ? json["error"].get<std::string>()
               : "<no error body: " + r.body + ">";
  }

  std::thread::id last_answer_thread_;  // of the last Call's answer
  std::string repo_;
  std::unique_ptr<ModelManager> manager_;
  std::unique_ptr<KServeService> service_;
  std::unique_ptr<HttpFrontend> frontend_;
};

TEST_F(HttpFrontendTest, HealthAnswersWithStatusCodesOnly) {
  HttpResponse live = Call("GET", "/v2/health/live");
  EXPECT_EQ(live.status, 200);
  EXPECT_EQ(live.body, "");
  EXPECT_EQ(Call("GET", "/v2/health/ready").status, 200);
  service_->set_ready(false);
  EXPECT_EQ(Call("GET", "/v2/health/ready").status, 400);
  EXPECT_EQ(Call("GET", "/v2/models/nope/ready").status, 400);
}

TEST_F(HttpFrontendTest, ServerMetadataListsTheHttpExtensions) {
  HttpResponse r = Call("GET", "/v2");
  ASSERT_EQ(r.status, 200);
  Json json = Json::parse(r.body);
  EXPECT_EQ(json["name"], "triton");
  EXPECT_THAT(json["extensions"].get<std::vector<std::string>>(),
              ::testing::IsSupersetOf(
                  {"binary_tensor_data", "statistics", "model_repository"}));
}

TEST_F(HttpFrontendTest, UnknownModelsAre404WithTritonsWording) {
  for (const char* target : {"/v2/models/nope", "/v2/models/nope/config",
                             "/v2/models/nope/versions/2/stats"}) {
    HttpResponse r = Call("GET", target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_THAT(Error(r),
                HasSubstr("Request for unknown model: 'nope' is not found"));
  }
  HttpResponse infer = Call("POST", "/v2/models/nope/infer",
                            R"({"inputs": [{"name": "x", "shape": [1],
                                "datatype": "FP32", "data": [1.0]}]})");
  EXPECT_EQ(infer.status, 404);
}

TEST_F(HttpFrontendTest, PathSegmentsArePercentDecoded) {
  HttpResponse r = Call("GET", "/v2/models/my%20model%2Fx/config");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(Error(r), HasSubstr("'my model/x'"));
  EXPECT_EQ(Call("GET", "/v2/models/bad%zzescape").status, 400);
}

TEST_F(HttpFrontendTest, UnknownPathsAre404AndWrongMethods405) {
  HttpResponse r = Call("GET", "/v2/nothing/here");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(Error(r),
              HasSubstr("no KServe v2 endpoint at '/v2/nothing/here'"));
  EXPECT_EQ(Call("GET", "/metrics").status, 404);
  HttpResponse wrong = Call("GET", "/v2/models/m/infer");
  EXPECT_EQ(wrong.status, 405);
  ASSERT_EQ(wrong.headers.size(), 1u);
  EXPECT_EQ(wrong.headers[0],
            (std::pair<std::string, std::string>("Allow", "POST")));
  EXPECT_EQ(Call("POST", "/v2/health/live").status, 405);
}

TEST_F(HttpFrontendTest, RestrictedApisNeedTheirHeader) {
  HttpResponse refused = Call("POST", "/v2/repository/index");
  EXPECT_EQ(refused.status, 403);
  EXPECT_THAT(Error(refused), HasSubstr("expecting header 'admin-key'"));
  EXPECT_EQ(
      Call("POST", "/v2/repository/index", "", {{"admin-key", "wrong"}}).status,
      403);
  HttpResponse allowed =
      Call("POST", "/v2/repository/index", "", {{"admin-key", "secret"}});
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.body, "[]");
  // Other groups stay open.
  EXPECT_EQ(Call("GET", "/v2/health/live").status, 200);
}

TEST_F(HttpFrontendTest, RepositoryLoadErrorsSayFailedToLoad) {
  const std::vector<std::pair<std::string, std::string>> admin = {
      {"admin-key", "secret"}};
  HttpResponse missing =
      Call("POST", "/v2/repository/models/nope/load", "", admin);
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(Error(missing), HasSubstr("failed to load 'nope'"));
  HttpResponse malformed =
      Call("POST", "/v2/repository/models/nope/load",
           R"({"parameters": {"config": "{{\"max_batch_size\": 1}}"}})", admin);
  EXPECT_EQ(malformed.status, 400);
  EXPECT_THAT(Error(malformed), HasSubstr("failed to load 'nope'"));
  HttpResponse long_name =
      Call("POST", "/v2/repository/models/m/load",
           Json{{"parameters",
                 {{"config", "{}"}, {"file:" + std::string(256, 'A'), "YQ=="}}}}
               .dump(),
           admin);
  EXPECT_EQ(long_name.status, 500);
  EXPECT_THAT(Error(long_name),
              HasSubstr("failed to poll from model repository"));
  HttpResponse bad_body =
      Call("POST", "/v2/repository/models/m/load", "{not json", admin);
  EXPECT_EQ(bad_body.status, 400);
}

// A model load takes as long as the model does: it must not hold the HTTP
// io thread that received it (which serves other connections too).
TEST_F(HttpFrontendTest, RepositoryLoadsAnswerFromTheirOwnThread) {
  const std::vector<std::pair<std::string, std::string>> admin = {
      {"admin-key", "secret"}};
  Call("POST", "/v2/repository/models/nope/load", "", admin);
  const std::thread::id load = last_answer_thread_;
  EXPECT_NE(load, std::this_thread::get_id());
  Call("POST", "/v2/repository/models/nope/unload", "", admin);
  EXPECT_EQ(last_answer_thread_, load);  // one thread, one at a time
  Call("GET", "/v2/health/live");
  EXPECT_EQ(last_answer_thread_, std::this_thread::get_id());
}

TEST_F(HttpFrontendTest, SharedMemoryStatusIsAnArrayAndErrorsAreKServes) {
  HttpResponse none = Call("GET", "/v2/systemsharedmemory/status");
  EXPECT_EQ(none.status, 200);
  EXPECT_EQ(none.body, "[]");
  EXPECT_EQ(Call("GET", "/v2/cudasharedmemory/status").body, "[]");
  HttpResponse unknown =
      Call("GET", "/v2/systemsharedmemory/region/nope/status");
  EXPECT_NE(unknown.status, 200);
  EXPECT_THAT(Error(unknown), HasSubstr("nope"));
  HttpResponse bad = Call("POST", "/v2/systemsharedmemory/region/r/register",
                          R"({"key": "/no-such-object", "byte_size": 64})");
  EXPECT_NE(bad.status, 200);
  EXPECT_THAT(Error(bad), HasSubstr("/no-such-object"));
  EXPECT_EQ(Call("POST", "/v2/systemsharedmemory/unregister").status, 200);
  EXPECT_EQ(Call("POST", "/v2/cudasharedmemory/region/r/unregister").status,
            200);
}

TEST_F(HttpFrontendTest, InferBodiesAreCheckedBeforeTheModelIsLookedUp) {
  HttpResponse r = Call("POST", "/v2/models/m/infer", "{\"inputs\": [");
  EXPECT_EQ(r.status, 400);
  HttpResponse header = Call("POST", "/v2/models/m/infer", "{}",
                             {{"inference-header-content-length", "twelve"}});
  EXPECT_EQ(header.status, 400);
  EXPECT_THAT(Error(header),
              HasSubstr("Inference-Header-Content-Length 'twelve'"));
}

TEST_F(HttpFrontendTest, TraceAndLoggingAreNotImplemented) {
  EXPECT_EQ(Call("GET", "/v2/trace/setting").status, 501);
  EXPECT_EQ(Call("GET", "/v2/logging").status, 501);
}

TEST(HttpStatusOfTest, TritonsCodes) {
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kAlreadyExists), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInternal), 500);
}

}  // namespace
}  // namespace coalesce
