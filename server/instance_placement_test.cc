// Triton's instance defaults (instance_placement.h) with a fake answer to
// "is a GPU usable": a config without instance groups gets one KIND_AUTO
// group (one instance per GPU where there are GPUs), resolved to KIND_CPU
// at once where there are none; explicit kinds stay; the GPU is asked once.
#include "server/instance_placement.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using Group = inference::ModelInstanceGroup;

inference::ModelConfig Parse(const char* text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config));
  return config;
}

struct FakeGpu {
  absl::Status answer;
  int asked = 0;
  std::function<absl::Status()> Check() {
    return [this] {
      ++asked;
      return answer;
    };
  }
};

TEST(InstancePlacementTest, NoGroupIsOneAutoGroupOnAGpuMachine) {
  FakeGpu gpu{absl::OkStatus()};
  inference::ModelConfig config = Parse(R"(name: "m")");
  ApplyInstanceDefaults(&config, gpu.Check());
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).kind(), Group::KIND_AUTO);
  EXPECT_EQ(config.instance_group(0).count(), 1);
  EXPECT_EQ(config.instance_group(0).gpus_size(), 0);  // every visible GPU
  EXPECT_EQ(gpu.asked, 1);
}

TEST(InstancePlacementTest, NoGroupIsOneCpuInstanceWithoutAGpu) {
  FakeGpu gpu{absl::FailedPreconditionError("no CUDA device")};
  inference::ModelConfig config = Parse(R"(name: "m")");
  ApplyInstanceDefaults(&config, gpu.Check());
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).kind(), Group::KIND_CPU);
  EXPECT_EQ(config.instance_group(0).count(), 1);
}

TEST(InstancePlacementTest, ExplicitKindsStayAndAutoResolvesOnce) {
  FakeGpu gpu{absl::FailedPreconditionError("no driver")};
  inference::ModelConfig config = Parse(R"(
      name: "m"
      instance_group [ { kind: KIND_GPU count: 2 }, { kind: KIND_CPU },
                       { count: 3 }, { kind: KIND_AUTO gpus: [ 1 ] } ])");
  ApplyInstanceDefaults(&config, gpu.Check());
  ASSERT_EQ(config.instance_group_size(), 4);
  EXPECT_EQ(config.instance_group(0).kind(), Group::KIND_GPU);  // fails later
  EXPECT_EQ(config.instance_group(1).kind(), Group::KIND_CPU);
  EXPECT_EQ(config.instance_group(2).kind(), Group::KIND_CPU);  // no kind
  EXPECT_EQ(config.instance_group(2).count(), 3);
  EXPECT_EQ(config.instance_group(3).kind(), Group::KIND_CPU);
  EXPECT_EQ(gpu.asked, 1);
}

TEST(InstancePlacementTest, NoAutoGroupAsksNothing) {
  FakeGpu gpu{absl::OkStatus()};
  inference::ModelConfig config =
      Parse(R"(name: "m" instance_group [ { kind: KIND_CPU } ])");
  ApplyInstanceDefaults(&config, gpu.Check());
  EXPECT_EQ(gpu.asked, 0);
  EXPECT_EQ(config.instance_group(0).kind(), Group::KIND_CPU);
}

}  // namespace
}  // namespace coalesce
