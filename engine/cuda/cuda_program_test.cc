// The GPU tests: every device test case (device_test_cases.h: one per
// operator variant a device lowers, and whole models) on a real GPU through
// the CUDA plugin, exactly as the server builds a KIND_GPU instance
// (engine/device/gpu_instance.h), against the CPU engine on fresh random inputs
// with each case's tolerance. Without a usable GPU every test reports
// SKIPPED with the plugin's reason, never passed. scripts/gpu-check runs
// this binary from the bundle. Also token packing on corpus exports.
//
// The plugin is $COALESCE_CUDA_PLUGIN when set, else the build's or the
// bundle's lib/libcoalesce_cuda.so beside this binary's folder.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/device/gpu_instance.h"
#include "engine/device/plugin_loader.h"
#include "engine/device/testing/device_test_cases.h"
#include "engine/model.h"
#include "engine/testing/packed_batches.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::coalesce::testing::DeviceTestCase;

// The plugin and the GPU to test, or why there is none.
struct Gpu {
  DevicePlugin* plugin = nullptr;
  int ordinal = 0;
  std::string why_not;
};

const Gpu& TheGpu() {
  static const Gpu* gpu = [] {
    auto* g = new Gpu;
    const char* env = std::getenv("COALESCE_CUDA_PLUGIN");
    auto plugin = LoadDevicePlugin(env != nullptr && *env != '\0'
                                       ? std::string(env)
                                       : DefaultCudaPluginPath());
    if (!plugin.ok()) {
      g->why_not = std::string(plugin.status().message());
      return g;
    }
    auto devices = (*plugin)->Devices();
    if (!devices.ok()) {
      g->why_not = std::string(devices.status().message());
      return g;
    }
    g->plugin = *plugin;
    g->ordinal = devices->front().ordinal;
    return g;
  }();
  return *gpu;
}

class GpuCaseTest : public ::testing::TestWithParam<DeviceTestCase> {};

TEST_P(GpuCaseTest, MatchesCpu) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  const DeviceTestCase& c = GetParam();
  auto model = ::coalesce::testing::LoadCase(c);
  ASSERT_TRUE(model.ok()) << model.status();
  for (int slots : {1, 2}) {
    GpuInstanceOptions options;
    options.pipeline.num_slots = slots;
    auto instance =
        CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
    ASSERT_TRUE(instance.ok()) << instance.status();
    EXPECT_EQ(::coalesce::testing::CheckAgainstCpu(c, *model, **instance), "")
        << slots << " slot(s)";
    EXPECT_TRUE((*instance)->health().ok()) << (*instance)->health();
  }
}

// The TF32 opt-in (gpu_precision "tf32"): GEMM and convolution inputs keep
// 10 mantissa bits, so outputs may differ from FP32 by about 1e-3 relative
// per product; the tolerance here is 2e-2 of max(1, |cpu|).
constexpr float kTf32Tolerance = 2e-2f;

TEST_P(GpuCaseTest, MatchesCpuWithTf32) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kTf32Tolerance);
  auto model = ::coalesce::testing::LoadCase(c);
  ASSERT_TRUE(model.ok()) << model.status();
  GpuInstanceOptions options;
  options.kernels.precision = DevicePrecision::kTf32;
  auto instance = CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ(::coalesce::testing::CheckAgainstCpu(c, *model, **instance), "");
}

// The FP16 opt-in (gpu_precision "fp16"): GEMM and convolution operands in
// float16 (10 mantissa bits, as TF32), float32 accumulation; a
// convolution's result is rounded to float16 once more. Same tolerance.
constexpr float kFp16Tolerance = 2e-2f;

TEST_P(GpuCaseTest, MatchesCpuWithFp16) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kFp16Tolerance);
  auto model = ::coalesce::testing::LoadCase(c);
  ASSERT_TRUE(model.ok()) << model.status();
  GpuInstanceOptions options;
  options.program.activations = DeviceFloat::kHalf;
  auto instance = CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ(::coalesce::testing::CheckAgainstCpu(c, *model, **instance), "");
  EXPECT_TRUE((*instance)->health().ok()) << (*instance)->health();
}

// FP16 as the server runs it: NHWC (gpu_layout's default with FP16),
// float16 activations between operators, fused cuDNN graphs for the
// convolutions where cuDNN supports them.
TEST_P(GpuCaseTest, MatchesCpuWithFp16Nhwc) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kFp16Tolerance);
  auto model = ::coalesce::testing::LoadCase(c, /*channels_last=*/true);
  ASSERT_TRUE(model.ok()) << model.status();
  GpuInstanceOptions options;
  options.program.activations = DeviceFloat::kHalf;
  for (int slots : {1, 2}) {
    options.pipeline.num_slots = slots;
    auto instance =
        CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
    ASSERT_TRUE(instance.ok()) << instance.status();
    EXPECT_EQ(::coalesce::testing::CheckAgainstCpu(c, *model, **instance), "")
        << slots << " slot(s)";
    EXPECT_TRUE((*instance)->health().ok()) << (*instance)->health();
  }
}

// BF16 as the server runs it (gpu_precision "bf16"): NHWC, bfloat16
// operands and activations (7 mantissa bits: 8x float16's steps), bfloat16
// tensor cores in GEMMs, cuDNN and the attention kernel. The simulated
// device's test (DeviceCaseTest.MatchesCpuInBf16Nhwc) uses this tolerance
// and says how it was chosen.
constexpr float kBf16Tolerance = 1e-1f;

TEST_P(GpuCaseTest, MatchesCpuWithBf16Nhwc) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  DeviceTestCase c = GetParam();
  c.tolerance = std::max(c.tolerance, kBf16Tolerance);
  auto model = ::coalesce::testing::LoadCase(c, /*channels_last=*/true);
  ASSERT_TRUE(model.ok()) << model.status();
  GpuInstanceOptions options;
  options.program.activations = DeviceFloat::kBFloat16;
  auto instance = CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ(::coalesce::testing::CheckAgainstCpu(c, *model, **instance), "");
  EXPECT_TRUE((*instance)->health().ok()) << (*instance)->health();
}

// Token packing on the GPU: corpus exports' packed forms against the same
// models padded, on a batch of lengths 16, 5, 11 and 1 and on a batch with
// holes (the attention over packed rows reads the mask at each row's
// position), equal at real positions within `tolerance` (the GEMMs may pick
// other algorithms for T rows than for B * S), zero at the packed outputs'
// padded ones. The corpus is $COALESCE_CORPUS_DIR, else tests/models/real
// under the working directory (the repository root in scripts/gpu-session).
void CheckPackedOnGpu(DeviceFloat activations, float tolerance) {
  const Gpu& gpu = TheGpu();
  if (gpu.plugin == nullptr) GTEST_SKIP() << "no usable GPU: " << gpu.why_not;
  const char* env = std::getenv("COALESCE_CORPUS_DIR");
  const std::string corpus =
      env != nullptr && *env != '\0' ? env : "tests/models/real";
  constexpr int64_t kBatch = 4, kSeq = 16;
  const std::vector<int64_t> lengths = {16, 5, 11, 1};
  std::vector<uint8_t> holes(kBatch * kSeq, 1);
  holes[1] = holes[2] = holes[kSeq + 3] = holes[kSeq + 7] = 0;
  for (int64_t s = 9; s < kSeq; ++s) holes[2 * kSeq + s] = 0;
  for (const char* name : {"bert_tiny__dynamo", "roberta_tiny__torchscript",
                           "clip_text_tiny__dynamo", "gpt2_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const std::string dir = corpus + "/" + name;
    ModelOptions model_options = ModelOptions::ForDevice(
        /*channels_last=*/activations != DeviceFloat::kFloat);
    model_options.token_packing = true;
    auto model = Model::LoadFromFile(dir + "/model.onnx", model_options);
    if (!model.ok() && absl::IsNotFound(model.status()))
      GTEST_SKIP() << "no corpus: " << model.status();
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_NE((*model)->packed(), nullptr) << (*model)->packing_refusal();
    int64_t seq = 0;
    auto mixed = ::coalesce::testing::MixedLengthInputs(dir, lengths, &seq);
    ASSERT_TRUE(mixed.ok()) << mixed.status();
    ASSERT_EQ(seq, kSeq);
    auto holed = ::coalesce::testing::MaskedInputs(dir, holes, kBatch, &seq);
    ASSERT_TRUE(holed.ok()) << holed.status();
    // runs[packing][batch]
    std::vector<std::vector<std::vector<::coalesce::testing::FloatOutput>>>
        runs(2);
    for (bool packing : {false, true}) {
      GpuInstanceOptions options;
      options.program.activations = activations;
      options.token_packing = packing;
      auto instance =
          CreateGpuInstance(*gpu.plugin, gpu.ordinal, *model, options);
      ASSERT_TRUE(instance.ok()) << instance.status();
      for (const auto* inputs : {&*mixed, &*holed}) {
        auto outputs = ::coalesce::testing::RunBatch(
            **instance, *inputs, (*model)->signature().outputs.size());
        ASSERT_TRUE(outputs.ok()) << outputs.status();
        runs[packing].push_back(*std::move(outputs));
      }
    }
    EXPECT_EQ(::coalesce::testing::CompareAtRealPositions(
                  runs[0][0], runs[1][0], lengths, seq, tolerance),
              "");
    EXPECT_EQ(::coalesce::testing::CompareAtRealPositions(
                  runs[0][1], runs[1][1], holes, kBatch, seq, tolerance),
              "")
        << "with holes";
  }
}

TEST(GpuTokenPackingTest, PackedMatchesPaddedFp32) {
  CheckPackedOnGpu(DeviceFloat::kFloat, 1e-4f);
}

TEST(GpuTokenPackingTest, PackedMatchesPaddedFp16) {
  CheckPackedOnGpu(DeviceFloat::kHalf, 2e-2f);
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, GpuCaseTest,
    ::testing::ValuesIn(::coalesce::testing::DeviceTestCases()),
    [](const ::testing::TestParamInfo<DeviceTestCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace coalesce
