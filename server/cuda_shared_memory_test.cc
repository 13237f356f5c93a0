// CUDA shared memory (cuda_shared_memory.h) over a fake opener whose
// "device memory" is a host buffer: Triton's refusal without a GPU, the
// clean-up calls, registering, status, inputs read from a region, outputs
// written back, bounds, and a region kept open by a span after Unregister.
#include "server/cuda_shared_memory.h"

#include <cstring>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

// Device memory standing in for another process's, shared with the test.
class FakeDeviceMemory : public SharedDeviceMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<std::string> bytes)
      : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_->size(); }
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
  CudaSharedMemoryRegistry Registry() {
    return CudaSharedMemoryRegistry(
        [this](
            int64_t device_id, const std::string& handle,
            uint64_t) -> absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> {
          ++opened_;
          if (device_id != 0)
            return absl::InvalidArgumentError("device_id 1: 1 GPU(s)");
          if (handle != "ok")
            return absl::InvalidArgumentError("cudaIpcOpenMemHandle failed");
          return std::make_unique<FakeDeviceMemory>(device_);
        });
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

TEST_F(CudaSharedMemoryTest, InputsAreReadAndOutputsWrittenBack) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  auto in = registry.ReadSpan("r", 4, 6);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(std::string(in->data, in->size), "456789");
  EXPECT_FALSE(in->write_back);
  device_->replace(4, 1, "X");  // the copy was taken at ReadSpan
  EXPECT_EQ(std::string(in->data, in->size), "456789");

  auto out = registry.WriteSpan("r", 10, 6);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->write_back);
  std::memcpy(out->data, "ZZZZ", 4);
  EXPECT_EQ(*device_, "0123X56789abcdef");  // nothing until written back
  ASSERT_TRUE(out->write_back(4).ok());
  EXPECT_EQ(*device_, "0123X56789ZZZZef");
  FakeDeviceMemory::fail_writes_ = true;
  absl::Status lost = out->write_back(4);
  EXPECT_EQ(lost.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(lost.message(),
            "writing CUDA shared memory region 'r': device lost");
}

TEST_F(CudaSharedMemoryTest, SpansOutsideARegionOrOfAnUnknownOneAreRefused) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  EXPECT_EQ(registry.ReadSpan("r", 10, 7).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.WriteSpan("r", 17, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.ReadSpan("q", 0, 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CudaSharedMemoryTest, ASpanKeepsItsRegionOpenAfterUnregister) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  auto out = registry.WriteSpan("r", 0, 2);
  ASSERT_TRUE(out.ok());
  registry.Unregister("");
  std::memcpy(out->data, "!!", 2);
  ASSERT_TRUE(out->write_back(2).ok());
  EXPECT_EQ(device_->substr(0, 2), "!!");
}

// SharedMemoryManager looks for names that are not system regions among
// the CUDA ones: inputs read, outputs written back.
TEST_F(CudaSharedMemoryTest, TheSystemManagerFindsCudaRegionsByName) {
  CudaSharedMemoryRegistry registry = Registry();
  ASSERT_TRUE(registry.Register("r", "ok", 0, 16).ok());
  SharedMemoryManager manager;
  EXPECT_EQ(manager.InputSpan("r", 0, 4).status().code(),
            absl::StatusCode::kNotFound);
  manager.set_cuda_regions(&registry);
  auto in = manager.InputSpan("r", 0, 4);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(std::string(in->data, in->size), "0123");
  auto out = manager.OutputSpan("r", 0, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->write_back);
  EXPECT_EQ(manager.InputSpan("nothing", 0, 4).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coalesce
