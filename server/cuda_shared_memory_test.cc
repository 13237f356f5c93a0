// CUDA shared memory without the IPC part (cuda_shared_memory.h): Triton's
// refusal on a machine without a usable GPU, Unimplemented with one, and
// the clean-up calls Triton's clients make first (unregister all, status)
// succeeding with nothing registered.
#include "server/cuda_shared_memory.h"

#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(CudaSharedMemoryTest, WithoutAGpuRegisterFailsInTritonsWords) {
  CudaSharedMemoryRegistry registry(
      [] { return absl::FailedPreconditionError("no CUDA device"); });
  absl::Status s =
      registry.Register("input_data", std::string(64, '\0'), 0, 64);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "failed to register CUDA shared memory region: 'input_data', GPUs "
            "not supported");
}

TEST(CudaSharedMemoryTest, WithAGpuRegisterSaysItIsNotBuilt) {
  CudaSharedMemoryRegistry registry([] { return absl::OkStatus(); });
  absl::Status s = registry.Register("r", std::string(64, '\0'), 0, 64);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'r'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("system shared memory is"), std::string::npos)
      << s;
}

TEST(CudaSharedMemoryTest, CleanUpCallsSucceedWithNothingRegistered) {
  CudaSharedMemoryRegistry registry(
      [] { return absl::FailedPreconditionError("no GPU"); });
  registry.Unregister("");
  registry.Unregister("never_registered");
  auto all = registry.Status("");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());
  auto one = registry.Status("r");
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(one.status().message(), "no CUDA shared memory region named 'r'");
}

}  // namespace
}  // namespace coalesce
