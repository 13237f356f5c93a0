#include "server/model_config_io.h"

#include <fstream>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

class ModelConfigIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void Write(const std::string& text) {
    std::ofstream(dir_ / "config.pbtxt") << text;
  }
  fs::path dir_;
};

TEST_F(ModelConfigIoTest, MissingConfigIsEmptyWithName) {
  auto config = ReadModelConfig(dir_, "m");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->name(), "m");
  EXPECT_EQ(config->input_size(), 0);
}

TEST_F(ModelConfigIoTest, ParsesTritonTextFormatAndSkipsUnknownFields) {
  Write(R"(
    name: "m"
    max_batch_size: 8
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
    dynamic_batching {
      preferred_batch_size: [ 4, 8 ]
      max_queue_delay_microseconds: 100
      default_queue_policy { timeout_action: DELAY max_queue_size: 3 }
    }
    model_warmup [ { name: "w" batch_size: 1 } ]
  )");
  auto config = ReadModelConfig(dir_, "m");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_batch_size(), 8);
  EXPECT_EQ(config->dynamic_batching().preferred_batch_size_size(), 2);
  EXPECT_EQ(config->dynamic_batching().default_queue_policy().max_queue_size(),
            3u);
}

TEST_F(ModelConfigIoTest, SyntaxErrorNamesTheLine) {
  Write("name: \"m\"\nmax_batch_size: eight\n");
  auto config = ReadModelConfig(dir_, "m");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("line 2"), std::string::npos)
      << config.status();
}

TEST_F(ModelConfigIoTest, NameMustMatchFolder) {
  Write("name: \"other\"");
  auto config = ReadModelConfig(dir_, "m");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ModelConfigIoTest, VersionFoldersArePositiveIntegersAscending) {
  for (const char* name : {"3", "1", "10", "0", "01", "x", "-2"}) {
    fs::create_directories(dir_ / name);
  }
  EXPECT_EQ(ListVersionFolders(dir_), (std::vector<int64_t>{1, 3, 10}));
}

TEST(SelectVersionsTest, Policies) {
  const std::vector<int64_t> available = {1, 2, 5};
  inference::ModelVersionPolicy policy;
  EXPECT_EQ(SelectVersions(policy, available), (std::vector<int64_t>{5}));
  policy.mutable_latest()->set_num_versions(2);
  EXPECT_EQ(SelectVersions(policy, available), (std::vector<int64_t>{2, 5}));
  policy.mutable_all();
  EXPECT_EQ(SelectVersions(policy, available), available);
  policy.mutable_specific()->add_versions(1);
  policy.mutable_specific()->add_versions(4);
  EXPECT_EQ(SelectVersions(policy, available), (std::vector<int64_t>{1}));
  EXPECT_TRUE(SelectVersions(inference::ModelVersionPolicy(), {}).empty());
}

}  // namespace
}  // namespace coalesce
