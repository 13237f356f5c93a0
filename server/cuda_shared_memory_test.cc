// CUDA shared memory (cuda_shared_memory.h) over a fake opener whose
// "device memory" is a host buffer: Triton's refusal without a GPU, the
// clean-up calls, registering, status, refs to a region's bytes, bounds, a
// region kept open by a ref after Unregister, and a response sink's two
// ways of answering an output bound for a region (written on the device,
// or through the host and written back when the request finishes).
#include "server/cuda_shared_memory.h"

#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/response_sinks.h"

namespace coalesce {
namespace {

// Device memory standing in for another process's, shared with the test.
class FakeDeviceMemory : public SharedDeviceMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<std::string> bytes)
      : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_->size(); }
  int ordinal() const override { return 0; }
  char* device_data() const override { return bytes_->data(); }
  absl::Status Read(size_t offset, size_t bytes, void* host) override {
    std::memcpy(host, bytes_->data() + offset, bytes);
    return absl::OkStatus();
  }
  absl::Status Write(size_t offset, const void* host, size_t bytes) override {
    if (fail_writes_) return absl::UnavailableError("device lost");
    std::memcpy(bytes_->data() + offset, host, bytes);
    return absl::OkStatus();
  }
  static inline bool fail_writes_ = false;

 private:
  std::shared_ptr<std::string> bytes_;
};

class CudaSharedMemoryTest : public ::testing::Test {
 protected:
  // Handles are "ok" (opened on the 64 bytes of `device_`) or anything
  // else (refused); device 1 does not exist.
  CudaSharedMemoryRegistry::Opener Opener() {
    return [this](int64_t device_id, const std::string& handle, uint64_t)
               -> absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> {
      ++opened_;
      if (device_id != 0)
        return absl::InvalidArgumentError("device_id 1: 1 GPU(s)");
      if (handle != "ok")
        return absl::InvalidArgumentError("cudaIpcOpenMemHandle failed");
      return std::make_unique<FakeDeviceMemory>(device_);
    };
  }
  CudaSharedMemoryRegistry Registry() {
    return CudaSharedMemoryRegistry(Opener());
  }
  void TearDown() override { FakeDeviceMemory::fail_writes_ = false; }

  std::shared_ptr<std::string> device_ =
      std::make_shared<std::string>("0123456789abcdef");
  int opened_ = 0;
};

TEST(CudaSharedMemoryNoGpuTest, RegisterFailsInTritonsWords) {
  CudaSharedMemoryRegistry registry(
      [](int64_t, const std::string&,
         uint64_t) -> absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> {
        return absl::FailedPreconditionError("no CUDA device");
      });
  absl::Status s =
      registry.Register("input_data", std::string(64, '\0'), 0, 64);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "failed to register CUDA shared memory region: 'input_data', GPUs "
            "not supported");
  registry.Unregister("");
  registry.Unregister("never_registered");
  auto all = registry.Status("");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());
  auto one = registry.Status("r");
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(one.status().message(), "no CUDA shared memory region named 'r'");
}

TEST_F(CudaSharedMemoryTest, RegisterStatusAndUnregister) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  EXPECT_EQ(registry.Register("r", "ok", 0, 16).code(),
            absl::StatusCode::kAlreadyExists);
  absl::Status bad = registry.Register("s", "garbage", 0, 16);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "failed to register CUDA shared memory region: 's': "
            "cudaIpcOpenMemHandle failed");
  EXPECT_EQ(registry.Register("t", "ok", 1, 16).code(),
            absl::StatusCode::kInvalidArgument);
  auto status = registry.Status("r");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].device_id, 0);
  EXPECT_EQ((*status)[0].byte_size, 16u);
  registry.Unregister("r");
  EXPECT_EQ(registry.Status("r").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CudaSharedMemoryTest, RefsNameTheRegionsBytesWithoutCopying) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  auto ref = registry.Ref("r", 4, 6);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->size, 6u);
  EXPECT_EQ(ref->device_data(), device_->data() + 4);
  device_->replace(4, 1, "X");  // read when used, not when named
  std::string host(6, '\0');
  ASSERT_TRUE(ref->Read(host.data()).ok());
  EXPECT_EQ(host, "X56789");
}

TEST_F(CudaSharedMemoryTest, RefsOutsideARegionOrOfAnUnknownOneAreRefused) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  EXPECT_EQ(registry.Ref("r", 10, 7).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Ref("r", 17, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Ref("q", 0, 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CudaSharedMemoryTest, ARefKeepsItsRegionOpenAfterUnregister) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  auto ref = registry.Ref("r", 0, 2);
  ASSERT_TRUE(ref.ok());
  registry.Unregister("");
  ASSERT_TRUE(ref->memory->Write(ref->offset, "!!", 2).ok());
  EXPECT_EQ(device_->substr(0, 2), "!!");
}

// SharedMemoryManager looks for names that are not system regions among
// the CUDA ones.
TEST_F(CudaSharedMemoryTest, TheSystemManagerFindsCudaRegionsByName) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  SharedMemoryManager manager;
  EXPECT_EQ(manager.TensorSpan("r", 0, 4).status().code(),
            absl::StatusCode::kNotFound);
  manager.set_cuda_regions(&registry);
  auto span = manager.TensorSpan("r", 2, 4);
  ASSERT_TRUE(span.ok()) << span.status();
  ASSERT_TRUE(span->device);
  EXPECT_EQ(span->data, nullptr);
  EXPECT_EQ(span->size, 4u);
  EXPECT_EQ(span->device.device_data(), device_->data() + 2);
  EXPECT_EQ(manager.TensorSpan("nothing", 0, 4).status().code(),
            absl::StatusCode::kNotFound);
}

// A sink whose Finish keeps the status Finalize answers with.
class FinalizingSink : public ProtoResponseSink {
 public:
  explicit FinalizingSink(inference::ModelInferResponse* response)
      : ProtoResponseSink(response) {}
  void Finish(const absl::Status& status) override {
    answer = Finalize(status);
  }
  bool IsCancelled() const override { return false; }
  absl::Status answer = absl::UnknownError("not finished");
};

class CudaOutputSinkTest : public CudaSharedMemoryTest {
 protected:
  // A sink whose output "y" goes to bytes [10, 16) of region "r".
  std::unique_ptr<FinalizingSink> Sink() {
    registry_ = std::make_unique<CudaSharedMemoryRegistry>(Opener());
    EXPECT_TRUE(registry_->Register("r", "ok", 0, 16).ok());
    manager_.set_cuda_regions(registry_.get());
    auto span = manager_.TensorSpan("r", 10, 6);
    EXPECT_TRUE(span.ok()) << span.status();
    auto sink = std::make_unique<FinalizingSink>(&response_);
    sink->set_output_regions({{"y", *span}});
    return sink;
  }

  inference::ModelInferResponse response_;
  std::unique_ptr<CudaSharedMemoryRegistry> registry_;
  SharedMemoryManager manager_;
};

TEST_F(CudaOutputSinkTest, HostPathIsWrittenToTheRegionWhenTheRequestEnds) {
  auto sink = Sink();
  char* host = sink->AddOutput("y", DataType::kUint8, {4}, 4);
  ASSERT_NE(host, nullptr);
  std::memcpy(host, "ZZZZ", 4);
  EXPECT_EQ(*device_, "0123456789abcdef");  // nothing until the answer
  sink->Finish(absl::OkStatus());
  ASSERT_TRUE(sink->answer.ok()) << sink->answer;
  EXPECT_EQ(*device_, "0123456789ZZZZef");
  ASSERT_EQ(response_.outputs_size(), 1);
  EXPECT_EQ(response_.outputs(0).name(), "y");
  ASSERT_EQ(response_.raw_output_contents_size(), 1);
  EXPECT_TRUE(response_.raw_output_contents(0).empty());
}

TEST_F(CudaOutputSinkTest, AnOutputWrittenOnTheDeviceIsOnlyDescribed) {
  auto sink = Sink();
  device_->replace(10, 4, "DDDD");  // what the executor's copy wrote
  sink->AddDeviceOutput("y", DataType::kUint8, {2, 2}, 4);
  sink->Finish(absl::OkStatus());
  ASSERT_TRUE(sink->answer.ok()) << sink->answer;
  EXPECT_EQ(*device_, "0123456789DDDDef");
  ASSERT_EQ(response_.outputs_size(), 1);
  EXPECT_EQ(response_.outputs(0).datatype(), "UINT8");
  EXPECT_EQ(response_.outputs(0).shape_size(), 2);
  ASSERT_EQ(response_.raw_output_contents_size(), 1);
  EXPECT_TRUE(response_.raw_output_contents(0).empty());
}

TEST_F(CudaOutputSinkTest, AFailedWriteFailsTheRequestNamingTheOutput) {
  auto sink = Sink();
  std::memcpy(sink->AddOutput("y", DataType::kUint8, {4}, 4), "ZZZZ", 4);
  FakeDeviceMemory::fail_writes_ = true;
  sink->Finish(absl::OkStatus());
  EXPECT_EQ(sink->answer.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(sink->answer.message(),
            "output 'y': writing CUDA shared memory: device lost");
}

TEST_F(CudaOutputSinkTest, AnOutputLargerThanItsSpanFailsTheRequest) {
  auto sink = Sink();
  ASSERT_NE(sink->AddOutput("y", DataType::kUint8, {7}, 7), nullptr);
  sink->Finish(absl::OkStatus());
  EXPECT_EQ(sink->answer.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sink->answer.message(),
            "output 'y': 7 bytes do not fit its shared memory span of 6");
  EXPECT_EQ(*device_, "0123456789abcdef");
}

}  // namespace
}  // namespace coalesce
