// End-to-end: the real coalesce-server binary driven by a C++ client built
// from our own proto stubs, on the generated example repository; and its
// HTTP frontend beside it, concurrently (the test scripts/tsan runs against
// the ThreadSanitizer build of the server).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.grpc.pb.h"
#include "tests/cpp/server_process.h"

namespace coalesce::testing {
namespace {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

constexpr int kWidth = 16;  // two_io's per-row width

class GrpcEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(COALESCE_EXAMPLES_DIR,
                                              std::vector<std::string>{});
    ASSERT_TRUE(server_->ok()) << server_->log();
    channel_ = grpc::CreateChannel(server_->address(),
                                   grpc::InsecureChannelCredentials());
    stub_ = GRPCInferenceService::NewStub(channel_);
    WaitReady();
  }

  // Polls ServerReady, bounded in count and time.
  void WaitReady() {
    for (int i = 0; i < 600; ++i) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(1));
      inference::ServerReadyResponse response;
      if (stub_->ServerReady(&context, {}, &response).ok() &&
          response.ready()) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "server never became ready:\n" << server_->log();
  }

  static ModelInferRequest TwoIoRequest(int batch, bool typed,
                                        std::vector<float>* a,
                                        std::vector<float>* b) {
    ModelInferRequest request;
    request.set_model_name("two_io");
    request.set_id("req-1");
    a->resize(batch * kWidth);
    b->resize(batch * kWidth);
    for (int i = 0; i < batch * kWidth; ++i) {
      (*a)[i] = 0.25f * i - 3.0f;
      (*b)[i] = 1.5f - 0.125f * i;
    }
    for (auto [name, values] : {std::pair{"a", a}, std::pair{"b", b}}) {
      auto* input = request.add_inputs();
      input->set_name(name);
      input->set_datatype("FP32");
      input->add_shape(batch);
      input->add_shape(kWidth);
      if (typed) {
        for (float v : *values) input->mutable_contents()->add_fp32_contents(v);
      } else {
        request.add_raw_input_contents(values->data(),
                                       values->size() * sizeof(float));
      }
    }
    return request;
  }

  grpc::Status Infer(const ModelInferRequest& request,
                     ModelInferResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    return stub_->ModelInfer(&context, request, response);
  }

  static std::vector<float> RawFloats(const ModelInferResponse& r, int index) {
    const std::string& raw = r.raw_output_contents(index);
    std::vector<float> out(raw.size() / sizeof(float));
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  }

  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
};

// One HTTP/1.1 exchange on a fresh connection ("Connection: close"): the
// status and the body; status 0 when the connection failed.
std::pair<int, std::string> HttpExchange(int port, const std::string& method,
                                         const std::string& path,
                                         const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return {0, ""};
  }
  const std::string request = method + " " + path +
                              " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                              "Content-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char chunk[8192];
  ssize_t n;
  while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0) answer.append(chunk, n);
  close(fd);
  const size_t end = answer.find("\r\n\r\n");
  if (answer.size() < 12 || end == std::string::npos) return {0, answer};
  return {std::stoi(answer.substr(9, 3)), answer.substr(end + 4)};
}

TEST_F(GrpcEndToEndTest, HttpAndGrpcServeTogether) {
  ASSERT_GT(server_->http_port(), 0) << server_->log();
  EXPECT_EQ(
      HttpExchange(server_->http_port(), "GET", "/v2/health/ready", "").first,
      200);
  // Both frontends at once, on the same model: two_io's sum over JSON on
  // HTTP, the same request's raw bytes on gRPC.
  std::string a_json, b_json;
  std::vector<float> a, b;
  const ModelInferRequest request = TwoIoRequest(1, false, &a, &b);
  for (int i = 0; i < kWidth; ++i) {
    a_json += (i ? "," : "") + std::to_string(a[i]);
    b_json += (i ? "," : "") + std::to_string(b[i]);
  }
  const std::string body =
      R"({"inputs": [{"name": "a", "shape": [1, 16], "datatype": "FP32", "data": [)" +
      a_json +
      R"(]}, {"name": "b", "shape": [1, 16], "datatype": "FP32", "data": [)" +
      b_json + R"(]}], "outputs": [{"name": "sum"}]})";
  std::vector<std::thread> clients;
  std::atomic<int> http_ok{0}, grpc_ok{0};
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (t % 2 == 0) {
          auto [status, answer] = HttpExchange(server_->http_port(), "POST",
                                               "/v2/models/two_io/infer", body);
          if (status == 200 && answer.find("\"sum\"") != std::string::npos) {
            ++http_ok;
          }
        } else {
          ModelInferResponse response;
          if (Infer(request, &response).ok() &&
              RawFloats(response, 0).size() == kWidth) {
            ++grpc_ok;
          }
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(http_ok.load(), 20) << server_->log();
  EXPECT_EQ(grpc_ok.load(), 20) << server_->log();
  // A failed HTTP request leaves the server serving both.
  EXPECT_EQ(HttpExchange(server_->http_port(), "POST",
                         "/v2/models/two_io/infer", "{not json")
                .first,
            400);
  EXPECT_EQ(
      HttpExchange(server_->http_port(), "GET", "/v2/models/two_io", "").first,
      200);
}

TEST_F(GrpcEndToEndTest, ServerMetadataListsExtensions) {
  grpc::ClientContext context;
  inference::ServerMetadataResponse response;
  ASSERT_TRUE(stub_->ServerMetadata(&context, {}, &response).ok());
  // Triton's name: its client examples check it (docs/server.md).
  EXPECT_EQ(response.name(), "triton");
  std::vector<std::string> ext(response.extensions().begin(),
                               response.extensions().end());
  EXPECT_NE(std::find(ext.begin(), ext.end(), "statistics"), ext.end());
}

TEST_F(GrpcEndToEndTest, ModelMetadataHasLeadingBatchDimension) {
  grpc::ClientContext context;
  inference::ModelMetadataRequest request;
  request.set_name("two_io");
  inference::ModelMetadataResponse response;
  ASSERT_TRUE(stub_->ModelMetadata(&context, request, &response).ok());
  ASSERT_EQ(response.inputs_size(), 2);
  EXPECT_EQ(response.inputs(0).datatype(), "FP32");
  ASSERT_EQ(response.inputs(0).shape_size(), 2);
  EXPECT_EQ(response.inputs(0).shape(0), -1);
  EXPECT_EQ(response.inputs(0).shape(1), kWidth);
}

TEST_F(GrpcEndToEndTest, RawAndTypedInputsGiveTheSum) {
  for (bool typed : {false, true}) {
    std::vector<float> a, b;
    const int batch = typed ? 3 : 5;
    ModelInferResponse response;
    grpc::Status status = Infer(TwoIoRequest(batch, typed, &a, &b), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.id(), "req-1");
    ASSERT_EQ(response.outputs_size(), 2);
    ASSERT_EQ(response.raw_output_contents_size(), 2);
    EXPECT_EQ(response.outputs(0).name(), "sum");
    EXPECT_EQ(response.outputs(0).shape(0), batch);
    const std::vector<float> sum = RawFloats(response, 0);
    ASSERT_EQ(sum.size(), a.size());
    for (size_t i = 0; i < sum.size(); ++i)
      EXPECT_FLOAT_EQ(sum[i], a[i] + b[i]);
    EXPECT_EQ(response.outputs(1).shape(1), 4);
  }
}

TEST_F(GrpcEndToEndTest, RequestedOutputSubset) {
  std::vector<float> a, b;
  ModelInferRequest request = TwoIoRequest(2, false, &a, &b);
  request.add_outputs()->set_name("product_proj");
  ModelInferResponse response;
  ASSERT_TRUE(Infer(request, &response).ok());
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "product_proj");
  EXPECT_EQ(response.raw_output_contents(0).size(), 2 * 4 * sizeof(float));
}

TEST_F(GrpcEndToEndTest, ErrorsHaveTheRightCodes) {
  std::vector<float> a, b;
  ModelInferResponse response;
  ModelInferRequest unknown = TwoIoRequest(1, false, &a, &b);
  unknown.set_model_name("no_such_model");
  EXPECT_EQ(Infer(unknown, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);

  ModelInferRequest missing = TwoIoRequest(1, false, &a, &b);
  missing.mutable_inputs()->RemoveLast();
  missing.mutable_raw_input_contents()->RemoveLast();
  grpc::Status status = Infer(missing, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("'b'"), std::string::npos)
      << status.error_message();

  ModelInferRequest both = TwoIoRequest(1, false, &a, &b);
  both.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.0f);
  status = Infer(both, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("'a'"), std::string::npos);

  // The server still serves after every error.
  ModelInferResponse ok_response;
  EXPECT_TRUE(Infer(TwoIoRequest(1, false, &a, &b), &ok_response).ok());
}

TEST_F(GrpcEndToEndTest, UnimplementedExtensionsSayUnimplemented) {
  grpc::ClientContext context;
  inference::TraceSettingResponse response;
  EXPECT_EQ(stub_->TraceSetting(&context, {}, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

// CUDA shared memory answers status with no region (server/
// cuda_shared_memory.h): Triton's clients ask before they start.
TEST_F(GrpcEndToEndTest, CudaSharedMemoryStatusListsNoRegion) {
  grpc::ClientContext context;
  inference::CudaSharedMemoryStatusResponse response;
  EXPECT_TRUE(stub_->CudaSharedMemoryStatus(&context, {}, &response).ok());
  EXPECT_EQ(response.regions_size(), 0);
}

TEST_F(GrpcEndToEndTest, StreamInferAnswersEveryRequest) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  auto stream = stub_->ModelStreamInfer(&context);
  constexpr int kRequests = 4;
  std::vector<float> a, b;
  for (int i = 0; i < kRequests; ++i) {
    ModelInferRequest request = TwoIoRequest(1 + i, false, &a, &b);
    request.set_id("stream-" + std::to_string(i));
    ASSERT_TRUE(stream->Write(request));
  }
  ModelInferRequest bad = TwoIoRequest(1, false, &a, &b);
  bad.set_model_name("no_such_model");
  ASSERT_TRUE(stream->Write(bad));
  stream->WritesDone();
  int answered = 0, errors = 0;
  inference::ModelStreamInferResponse response;
  while (stream->Read(&response)) {
    if (!response.error_message().empty()) {
      ++errors;
    } else {
      ++answered;
      EXPECT_EQ(response.infer_response().raw_output_contents_size(), 2);
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(answered, kRequests);
  EXPECT_EQ(errors, 1);
}

TEST_F(GrpcEndToEndTest, SigtermExitsZero) {
  std::vector<float> a, b;
  ModelInferResponse response;
  ASSERT_TRUE(Infer(TwoIoRequest(2, false, &a, &b), &response).ok());
  EXPECT_EQ(server_->StopWith(SIGTERM, std::chrono::seconds(30)), 0)
      << server_->log();
}

}  // namespace
}  // namespace coalesce::testing
