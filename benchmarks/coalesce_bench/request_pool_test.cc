// RequestPool and BuildRequestPool, and both gRPC senders cycling through a
// pool against an in-process server on loopback that answers each request
// with the variant it received.
#include "benchmarks/coalesce_bench/request_pool.h"

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchmarks/coalesce_bench/grpc_infer_sender.h"
#include "benchmarks/coalesce_bench/grpc_stream_infer_sender.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.grpc.pb.h"

namespace coalesce::bench {
namespace {

using ::testing::HasSubstr;
using Request = inference::ModelInferRequest;

constexpr absl::Duration kWait = absl::Seconds(20);  // bound of every wait

// Variant i of a pool is told apart by its model_version "v<i>".
std::shared_ptr<const RequestPool> Pool(int n) {
  std::vector<Request> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    requests[static_cast<size_t>(i)].set_model_name("m");
    requests[static_cast<size_t>(i)].set_model_version(absl::StrCat("v", i));
  }
  return std::make_shared<const RequestPool>(std::move(requests));
}

TEST(RequestPoolTest, NextCyclesRoundRobin) {
  auto pool = Pool(3);
  std::vector<std::string> got;
  for (int i = 0; i < 7; ++i) got.push_back(pool->Next().model_version());
  EXPECT_EQ(got, (std::vector<std::string>{"v0", "v1", "v2", "v0", "v1", "v2",
                                           "v0"}));
  // References stay put: the same object every time round.
  EXPECT_EQ(&pool->Next(), &pool->at(1));
}

TEST(RequestPoolTest, ConcurrentCallersShareOneCycle) {
  auto pool = Pool(4);
  std::map<const Request*, int> counts;
  absl::Mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::map<const Request*, int> mine;
      for (int i = 0; i < 1000; ++i) ++mine[&pool->Next()];
      absl::MutexLock lock(&mu);
      for (const auto& [r, n] : mine) counts[r] += n;
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [r, n] : counts) EXPECT_EQ(n, 1000) << r->model_version();
}

PoolContents TwoInputs(int variants) {
  PoolContents c;
  c.request.model = "bert";
  c.request.inputs = {{"input_ids", "INT64", {2, 4}},
                      {"attention_mask", "INT64", {2, 4}}};
  c.request.seed = 11;
  c.variants = variants;
  return c;
}

PaddingMaskFlag FileFlag(const std::string& name, const std::string& lengths) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << lengths;
  auto flag = ParsePaddingMaskFlag("attention_mask=file:" + path);
  EXPECT_TRUE(flag.ok()) << flag.status();
  return *flag;
}

// The INT64 [2,4] mask of rows with lengths a and b.
std::string Mask(int a, int b) {
  std::string out(2 * 4 * 8, '\0');
  for (int i = 0; i < a; ++i) out[static_cast<size_t>(8 * i)] = 1;
  for (int i = 0; i < b; ++i) out[static_cast<size_t>(32 + 8 * i)] = 1;
  return out;
}

TEST(BuildRequestPoolTest, WithoutFlagsItIsTodaysSingleRequest) {
  PoolContents c = TwoInputs(1);
  auto built = BuildRequestPool(c);
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_EQ(built->pool->size(), 1u);
  auto single = BuildInferRequest(c.request);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(built->pool->at(0).SerializeAsString(),
            single->SerializeAsString());
  EXPECT_EQ(built->mean_fill, 0);
}

TEST(BuildRequestPoolTest, VariantsAdvanceTheSeedAndEachGetsItsMask) {
  PoolContents c = TwoInputs(3);
  c.padding_mask = FileFlag("pool_lengths", "4\n1\n2\n3\n");
  auto built = BuildRequestPool(c);
  ASSERT_TRUE(built.ok()) << built.status();
  const RequestPool& pool = *built->pool;
  ASSERT_EQ(pool.size(), 3u);
  // Rows take the file's lengths in order, cycling: (4,1), (2,3), (4,1).
  EXPECT_EQ(pool.at(0).raw_input_contents(1), Mask(4, 1));
  EXPECT_EQ(pool.at(1).raw_input_contents(1), Mask(2, 3));
  EXPECT_EQ(pool.at(2).raw_input_contents(1), Mask(4, 1));
  // Variant v's input i is random with seed 11 + 2v + i.
  for (int v = 0; v < 3; ++v) {
    EXPECT_EQ(pool.at(static_cast<size_t>(v)).raw_input_contents(0),
              *RandomTensorData(c.request.inputs[0],
                                11 + 2 * static_cast<uint64_t>(v)))
        << v;
    EXPECT_EQ(pool.at(static_cast<size_t>(v)).inputs(1).name(),
              "attention_mask");
  }
  EXPECT_NE(pool.at(0).raw_input_contents(0), pool.at(1).raw_input_contents(0));
  EXPECT_EQ(built->seq_len, 4);
  EXPECT_EQ(built->mask_rows, 2);
  EXPECT_EQ(built->min_length, 1);
  EXPECT_EQ(built->max_length, 4);
  EXPECT_DOUBLE_EQ(built->mean_fill, (5 + 5 + 5) / 6.0 / 4.0);
}

TEST(BuildRequestPoolTest, InputDataIsSharedAndTheMaskIsNotRead) {
  const std::string dir = ::testing::TempDir();
  // Only input_ids has a file: the mask is generated.
  std::ofstream(dir + "/input_ids", std::ios::binary)
      << std::string(2 * 4 * 8, '\x07');
  PoolContents c = TwoInputs(2);
  c.request.input_data_dir = dir;
  c.padding_mask = FileFlag("pool_lengths_dir", "1\n2\n3\n4\n");
  auto built = BuildRequestPool(c);
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_EQ(built->pool->size(), 2u);
  for (size_t v = 0; v < 2; ++v) {
    EXPECT_EQ(built->pool->at(v).raw_input_contents(0),
              std::string(64, '\x07'));
  }
  EXPECT_EQ(built->pool->at(0).raw_input_contents(1), Mask(1, 2));
  EXPECT_EQ(built->pool->at(1).raw_input_contents(1), Mask(3, 4));
}

TEST(BuildRequestPoolTest, LengthAboveSIsAnError) {
  PoolContents c = TwoInputs(2);
  c.padding_mask = FileFlag("pool_lengths_long", "2\n5\n");
  auto built = BuildRequestPool(c);
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(built.status().message()),
              HasSubstr("--padding-mask lengths file"));
  EXPECT_THAT(std::string(built.status().message()),
              HasSubstr("length 5 (entry 2) exceeds the sequence length S=4"));
}

TEST(BuildRequestPoolTest, APoolOverFourGiBIsRefused) {
  PoolContents c;
  c.request.inputs = {{"x", "FP32", {1 << 20}}};  // 4 MiB a request
  c.variants = 100000;
  auto built = BuildRequestPool(c);
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(built.status().message()),
              HasSubstr("--request-variants 100000"));
}

// Answers each request with what reached it: ModelInfer fails with
// "<version>"; ModelStreamInfer answers with error_message
// "<version> id <id>".
class VariantEchoService final
    : public inference::GRPCInferenceService::Service {
 public:
  grpc::Status ModelInfer(grpc::ServerContext*, const Request* request,
                          inference::ModelInferResponse*) override {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        request->model_version());
  }

  grpc::Status ModelStreamInfer(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<inference::ModelStreamInferResponse, Request>*
          stream) override {
    Request request;
    while (stream->Read(&request)) {
      inference::ModelStreamInferResponse response;
      response.mutable_infer_response()->set_id(request.id());
      response.set_error_message(
          absl::StrCat(request.model_version(), " id ", request.id()));
      stream->Write(response);
    }
    return grpc::Status::OK;
  }
};

// The messages of completed requests, by the index each was sent with.
class Messages {
 public:
  InferSender::Done For(int index) {
    return [this, index](const absl::Status& status) {
      absl::MutexLock lock(&mu_);
      by_index_[index] = std::string(status.message());
    };
  }

  std::map<int, std::string> Wait(size_t n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return by_index_.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&reached), kWait);
    return by_index_;
  }

 private:
  absl::Mutex mu_;
  std::map<int, std::string> by_index_ ABSL_GUARDED_BY(mu_);
};

class SenderPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    options_ = {"127.0.0.1:" + std::to_string(port), 2,
                std::chrono::seconds(20)};
  }

  void TearDown() override { server_->Shutdown(); }

  VariantEchoService service_;
  std::unique_ptr<grpc::Server> server_;
  GrpcSenderOptions options_;
};

TEST_F(SenderPoolTest, UnarySenderSendsTheVariantsRoundRobin) {
  auto sender = std::make_unique<GrpcInferSender>(options_, Pool(3));
  Messages done;
  for (int i = 0; i < 7; ++i) sender->Send(i % 2, done.For(i));
  const std::map<int, std::string> got = done.Wait(7);
  ASSERT_EQ(got.size(), 7u);
  for (const auto& [i, message] : got) {
    EXPECT_EQ(message, absl::StrCat("v", i % 3)) << i;
  }
  sender.reset();
}

TEST_F(SenderPoolTest, StreamSenderCopiesEachVariantInWithItsId) {
  auto sender = std::make_unique<GrpcStreamInferSender>(options_, Pool(3));
  Messages done;
  // Several queued on one stream: each write takes its own variant and id.
  for (int i = 0; i < 8; ++i) sender->Send(0, done.For(i));
  const std::map<int, std::string> got = done.Wait(8);
  ASSERT_EQ(got.size(), 8u);
  for (const auto& [i, message] : got) {
    // Ids are 1, 2, ... in send order; variants cycle from v0.
    EXPECT_EQ(message, absl::StrCat("v", i % 3, " id ", i + 1)) << i;
  }
  sender.reset();
}

TEST_F(SenderPoolTest, StreamSenderWithOneRequestKeepsIt) {
  Request request;
  request.set_model_version("only");
  auto sender = std::make_unique<GrpcStreamInferSender>(options_, request);
  Messages done;
  for (int i = 0; i < 3; ++i) sender->Send(1, done.For(i));
  const std::map<int, std::string> got = done.Wait(3);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& [i, message] : got) {
    EXPECT_EQ(message, absl::StrCat("only id ", i + 1)) << i;
  }
  sender.reset();
}

}  // namespace
}  // namespace coalesce::bench
