#include "server/gpu_metrics.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(GpuVisibleTest, UnsetShowsEveryGpu) {
  EXPECT_TRUE(GpuVisible(nullptr, 3, "GPU-abc"));
}

TEST(GpuVisibleTest, ByIndexOrUuidPrefix) {
  EXPECT_TRUE(GpuVisible("0,2", 2, "GPU-abc"));
  EXPECT_FALSE(GpuVisible("0,2", 1, "GPU-abc"));
  EXPECT_TRUE(GpuVisible("GPU-ab", 5, "GPU-abc"));
  EXPECT_TRUE(GpuVisible("1, GPU-abc", 5, "GPU-abc"));
  EXPECT_FALSE(GpuVisible("GPU-abd", 0, "GPU-abc"));
  EXPECT_FALSE(GpuVisible("", 0, "GPU-abc"));
}

class GpuMetricsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("COALESCE_NVML_LIBRARY");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
};

TEST_F(GpuMetricsTest, ReadsEveryValueThroughNvml) {
  setenv("COALESCE_NVML_LIBRARY", COALESCE_FAKE_NVML, 1);
  unsetenv("CUDA_VISIBLE_DEVICES");
  auto gpus = GpuMetrics::Open();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  const std::vector<GpuReading> r = (*gpus)->Read();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_DOUBLE_EQ(*r[0].utilization, 0.37);
  EXPECT_EQ(*r[0].memory_total_bytes, 85899345920ULL);
  EXPECT_EQ(*r[0].memory_used_bytes, 1234567890ULL);
  EXPECT_DOUBLE_EQ(*r[0].power_watts, 123.456);
  EXPECT_EQ(r[1].uuid, "GPU-55555555-6666-7777-8888-999999999999");
  EXPECT_FALSE(r[1].power_watts.has_value());  // not supported by the board
}

TEST_F(GpuMetricsTest, HonoursCudaVisibleDevices) {
  setenv("COALESCE_NVML_LIBRARY", COALESCE_FAKE_NVML, 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  auto gpus = GpuMetrics::Open();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  const std::vector<GpuReading> r = (*gpus)->Read();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].uuid, "GPU-55555555-6666-7777-8888-999999999999");
}

TEST_F(GpuMetricsTest, MissingLibraryIsNotFoundWithTheReason) {
  setenv("COALESCE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto gpus = GpuMetrics::Open();
  ASSERT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("/nonexistent/libnvidia-ml.so.1"),
            absl::string_view::npos);
}

TEST_F(GpuMetricsTest, LibraryWithoutNvmlIsRefusedNamingTheEntryPoint) {
  setenv("COALESCE_NVML_LIBRARY", "libc.so.6", 1);
  auto gpus = GpuMetrics::Open();
  ASSERT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gpus.status().message().find("nvmlInit_v2"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace coalesce
