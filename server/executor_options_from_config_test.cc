#include "server/executor_options_from_config.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config));
  return config;
}

TEST(ExecutorOptionsFromConfigTest, CoresAreSharedByTheInstances) {
  auto one = CpuExecutorOptionsFromConfig(Parse(R"(name: "m")"), 8);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->intra_op_threads, 8);
  auto three = CpuExecutorOptionsFromConfig(
      Parse(R"(name: "m" instance_group [{ count: 2 }, { count: 1 }])"), 8);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->intra_op_threads, 2);
  auto many = CpuExecutorOptionsFromConfig(
      Parse(R"(name: "m" instance_group [{ count: 4 }])"), 2);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->intra_op_threads, 1);
}

TEST(ExecutorOptionsFromConfigTest, FlushDenormalsDefaultsToTrue) {
  auto options = CpuExecutorOptionsFromConfig(Parse(R"(name: "m")"), 2);
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->flush_denormals);
}

TEST(ExecutorOptionsFromConfigTest, FlushDenormalsFromParameters) {
  auto off = CpuExecutorOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "flush_denormals" value { string_value: "false" } }
      parameters { key: "unrelated" value { string_value: "x" } })"),
                                          2);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->flush_denormals);
  auto on = CpuExecutorOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "flush_denormals" value { string_value: "true" } })"),
                                         2);
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->flush_denormals);
}

TEST(ExecutorOptionsFromConfigTest, CpuFusedAttentionDefaultsOnAndTurnsOff) {
  auto on = CpuExecutorOptionsFromConfig(Parse(R"(name: "m")"), 2);
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->fuse_attention);
  auto off = CpuExecutorOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "cpu_fused_attention" value { string_value: "false" } })"),
                                          2);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->fuse_attention);
  auto bad = CpuExecutorOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "cpu_fused_attention" value { string_value: "1" } })"),
                                          2);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("'cpu_fused_attention'"));
}

TEST(ExecutorOptionsFromConfigTest, BadValueNamesTheParameter) {
  auto bad = CpuExecutorOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "flush_denormals" value { string_value: "yes" } })"),
                                          2);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("'flush_denormals'"));
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("\"yes\""));
}

TEST(ExecutorOptionsFromConfigTest, TokenPackingIsOptIn) {
  auto absent = TokenPackingFromConfig(Parse(R"(name: "m")"));
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(*absent);
  auto on = TokenPackingFromConfig(Parse(R"(
      name: "m"
      parameters { key: "token_packing" value { string_value: "true" } })"));
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(*on);
  auto bad = TokenPackingFromConfig(Parse(R"(
      name: "m"
      parameters { key: "token_packing" value { string_value: "on" } })"));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("'token_packing'"));
}

TEST(ExecutorOptionsFromConfigTest, GpuDefaultsAreDoubleBufferedExactFp32) {
  auto options = GpuInstanceOptionsFromConfig(Parse(R"(name: "m")"));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->pipeline.num_slots, 2);
  EXPECT_EQ(options->kernels.precision, DevicePrecision::kFp32);
  EXPECT_TRUE(options->program.device_graphs);
  EXPECT_TRUE(options->program.pad_batches);
}

TEST(ExecutorOptionsFromConfigTest, GpuParameters) {
  auto options = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m"
      parameters { key: "double_buffering" value { string_value: "false" } }
      parameters { key: "gpu_precision" value { string_value: "tf32" } }
      parameters { key: "cuda_graphs" value { string_value: "false" } }
      parameters { key: "cuda_graph_padding" value { string_value: "false" } })"));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->program.device_graphs);
  EXPECT_FALSE(options->program.pad_batches);
  EXPECT_EQ(options->pipeline.num_slots, 1);
  EXPECT_EQ(options->kernels.precision, DevicePrecision::kTf32);
  auto fp32 = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "fp32" } })"));
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->kernels.precision, DevicePrecision::kFp32);
  EXPECT_EQ(fp32->program.activations, DeviceFloat::kFloat);
  auto fp16 = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "fp16" } })"));
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  EXPECT_EQ(fp16->program.activations, DeviceFloat::kHalf);
  EXPECT_EQ(fp16->kernels.precision, DevicePrecision::kFp32);
  auto bf16 = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "bf16" } })"));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->program.activations, DeviceFloat::kBFloat16);
  EXPECT_EQ(bf16->kernels.precision, DevicePrecision::kFp32);
}

TEST(ExecutorOptionsFromConfigTest, BadGpuParametersAreRefusedByName) {
  auto bad = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "half" } })"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("'gpu_precision'"));
  auto db = GpuInstanceOptionsFromConfig(Parse(R"(
      name: "m" parameters { key: "double_buffering" value { string_value: "no" } })"));
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(db.status().message()),
              ::testing::HasSubstr("'double_buffering'"));
}

TEST(ExecutorOptionsFromConfigTest, GpuLayoutDefaultsToNhwcWithFp16) {
  auto fp32 = GpuChannelsLastFromConfig(Parse(R"(name: "m")"));
  ASSERT_TRUE(fp32.ok());
  EXPECT_FALSE(*fp32);
  auto fp16 = GpuChannelsLastFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "fp16" } })"));
  ASSERT_TRUE(fp16.ok());
  EXPECT_TRUE(*fp16);
  auto bf16 = GpuChannelsLastFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_precision" value { string_value: "bf16" } })"));
  ASSERT_TRUE(bf16.ok());
  EXPECT_TRUE(*bf16);
  auto nchw = GpuChannelsLastFromConfig(Parse(R"(
      name: "m"
      parameters { key: "gpu_precision" value { string_value: "fp16" } }
      parameters { key: "gpu_layout" value { string_value: "nchw" } })"));
  ASSERT_TRUE(nchw.ok());
  EXPECT_FALSE(*nchw);
  auto nhwc = GpuChannelsLastFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_layout" value { string_value: "nhwc" } })"));
  ASSERT_TRUE(nhwc.ok());
  EXPECT_TRUE(*nhwc);
  auto bad = GpuChannelsLastFromConfig(Parse(R"(
      name: "m" parameters { key: "gpu_layout" value { string_value: "NHWC" } })"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("'gpu_layout'"));
}

}  // namespace
}  // namespace coalesce
