// GrpcStreamInferSender against an in-process gRPC server on loopback whose
// ModelStreamInfer behaves as the request's model name says.
#include "benchmarks/coalesce_bench/grpc_stream_infer_sender.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.grpc.pb.h"

namespace coalesce::bench {
namespace {

using Request = inference::ModelInferRequest;
using Response = inference::ModelStreamInferResponse;

constexpr absl::Duration kWait = absl::Seconds(20);  // bound of every wait

// Model names: "echo" answers each request; "pairs_reversed" answers every
// two requests in reverse order, with error_message "answer to <id>" so that
// a test sees which request each answer reached; "error" answers with
// error_message;
// "silent" never answers; "hangup" ends the stream with RESOURCE_EXHAUSTED.
class FakeStreamService final
    : public inference::GRPCInferenceService::Service {
 public:
  grpc::Status ModelStreamInfer(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<Response, Request>* stream) override {
    Count(&streams_opened_);
    Request request;
    std::vector<std::string> held;
    grpc::Status status = grpc::Status::OK;
    while (stream->Read(&request)) {
      const std::string& mode = request.model_name();
      if (mode == "echo") {
        stream->Write(Answer(request.id()));
      } else if (mode == "pairs_reversed") {
        held.push_back(request.id());
        if (held.size() == 2) {
          for (const std::string& id : {held[1], held[0]}) {
            Response r = Answer(id);
            r.set_error_message("answer to " + id);
            stream->Write(r);
          }
          held.clear();
        }
      } else if (mode == "error") {
        Response r = Answer(request.id());
        r.set_error_message("input 'x': bad shape");
        stream->Write(r);
      } else if (mode == "hangup") {
        status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "go away");
        break;
      }  // "silent": nothing
    }
    Count(&streams_ended_);
    return status;
  }

  int streams_opened() {
    absl::MutexLock lock(&mu_);
    return streams_opened_;
  }

  // True once `n` handlers have returned (waits up to kWait).
  bool WaitStreamsEnded(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return streams_ended_ >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kWait);
  }

 private:
  static Response Answer(const std::string& id) {
    Response r;
    r.mutable_infer_response()->set_id(id);
    return r;
  }

  void Count(int* counter) {
    absl::MutexLock lock(&mu_);
    ++*counter;
  }

  absl::Mutex mu_;
  int streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  int streams_ended_ ABSL_GUARDED_BY(mu_) = 0;
};

// Statuses by the index each request was sent with.
class Completions {
 public:
  InferSender::Done For(int index) {
    return [this, index](const absl::Status& status) {
      absl::MutexLock lock(&mu_);
      by_index_[index] = status;
      statuses_.push_back(status);
    };
  }

  // Waits (bounded) for `n` completions; false if they did not all come.
  bool Wait(size_t n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return statuses_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kWait);
  }

  std::map<int, absl::Status> by_index() {
    absl::MutexLock lock(&mu_);
    return by_index_;
  }
  std::vector<absl::Status> statuses() {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }

 private:
  absl::Mutex mu_;
  std::map<int, absl::Status> by_index_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
};

class GrpcStreamInferSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    url_ = "127.0.0.1:" + std::to_string(port);
  }

  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<GrpcStreamInferSender> Sender(
      const std::string& model, int channels = 1,
      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    Request request;
    request.set_model_name(model);
    return std::make_unique<GrpcStreamInferSender>(
        GrpcStreamInferSender::Options{url_, channels, timeout}, request);
  }

  FakeStreamService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string url_;
};

TEST_F(GrpcStreamInferSenderTest, OneStreamPerLaneCarriesManyRequests) {
  auto sender = Sender("echo", /*channels=*/2);
  Completions done;
  for (int i = 0; i < 30; ++i) sender->Send(i % 3, done.For(i));
  ASSERT_TRUE(done.Wait(30));
  for (const absl::Status& s : done.statuses()) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(service_.streams_opened(), 3);
  sender.reset();  // closes the streams: the server's handlers return
  EXPECT_TRUE(service_.WaitStreamsEnded(3));
}

TEST_F(GrpcStreamInferSenderTest, ResponsesAreMatchedByIdNotByOrder) {
  auto sender = Sender("pairs_reversed");
  Completions done;
  // A fresh sender numbers its requests 1, 2, ... in send order; the
  // server answers 2, 1, 4, 3.
  for (int i = 0; i < 4; ++i) sender->Send(0, done.For(i));
  ASSERT_TRUE(done.Wait(4));
  const std::map<int, absl::Status> got = done.by_index();
  ASSERT_EQ(got.size(), 4u);
  for (const auto& [index, status] : got) {
    EXPECT_EQ(status.message(), "answer to " + std::to_string(index + 1));
  }
}

TEST_F(GrpcStreamInferSenderTest, ErrorResponseFailsOnlyItsRequest) {
  auto sender = Sender("error");
  Completions done;
  sender->Send(0, done.For(0));
  ASSERT_TRUE(done.Wait(1));
  sender->Send(0, done.For(1));
  ASSERT_TRUE(done.Wait(2));
  for (const absl::Status& s : done.statuses()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("'x'"));
  }
  EXPECT_EQ(service_.streams_opened(), 1);  // the stream stayed open
}

TEST_F(GrpcStreamInferSenderTest, TimeoutCancelsTheStreamAndTheLaneReopens) {
  auto sender = Sender("silent", 1, std::chrono::milliseconds(100));
  Completions done;
  sender->Send(0, done.For(0));
  sender->Send(0, done.For(1));
  ASSERT_TRUE(done.Wait(2));
  sender->Send(0, done.For(2));  // a new stream for the lane
  ASSERT_TRUE(done.Wait(3));
  for (const absl::Status& s : done.statuses()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  }
  EXPECT_EQ(service_.streams_opened(), 2);
}

TEST_F(GrpcStreamInferSenderTest, ServerEndingTheStreamFailsWithItsStatus) {
  auto sender = Sender("hangup");
  Completions done;
  sender->Send(0, done.For(0));
  ASSERT_TRUE(done.Wait(1));
  EXPECT_EQ(done.statuses()[0].code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(done.statuses()[0].message()),
              ::testing::HasSubstr("go away"));
}

TEST(GrpcStreamInferSenderNoServerTest, UnreachableServerFailsTheRequest) {
  Request request;
  request.set_model_name("echo");
  // Port 1 on loopback: nothing listens there.
  GrpcStreamInferSender sender({"127.0.0.1:1", 1, std::chrono::seconds(20)},
                               request);
  Completions done;
  sender.Send(0, done.For(0));
  ASSERT_TRUE(done.Wait(1));
  EXPECT_EQ(done.statuses()[0].code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coalesce::bench
