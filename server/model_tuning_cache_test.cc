#include "server/model_tuning_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

class ModelTuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("model_tuning_cache_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(ModelTuningCacheTest, AFirstStartHasNoChoicesAndSavesWhatWasMeasured) {
  auto first = ModelTuningCache::Open(dir_, "m");
  EXPECT_EQ(first->cache()->size(), 0u);
  first->SaveIfChanged();  // nothing measured: no file
  EXPECT_FALSE(fs::exists(dir_ / kTuningCacheFileName));
  first->cache()->Insert("gpu|conv a", {"eng3", 12.5});
  first->SaveIfChanged();
  ASSERT_TRUE(fs::exists(dir_ / kTuningCacheFileName));

  auto second = ModelTuningCache::Open(dir_, "m");
  ASSERT_EQ(second->cache()->size(), 1u);
  auto found = second->cache()->Find("gpu|conv a");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->choice, "eng3");
  EXPECT_FALSE(second->cache()->changed());
}

TEST_F(ModelTuningCacheTest, AMalformedFileIsLeftOutAndRewritten) {
  std::ofstream(dir_ / kTuningCacheFileName) << "not a tuning cache\n";
  auto opened = ModelTuningCache::Open(dir_, "m");
  EXPECT_EQ(opened->cache()->size(), 0u);
  opened->cache()->Insert("gpu|conv b", {"eng7", 3.0});
  opened->SaveIfChanged();
  EXPECT_EQ(ModelTuningCache::Open(dir_, "m")->cache()->size(), 1u);
}

TEST_F(ModelTuningCacheTest, AnUnwritableFolderKeepsTheChoicesInMemory) {
  auto opened = ModelTuningCache::Open(dir_ / "missing" / "1", "m");
  opened->cache()->Insert("gpu|conv c", {"eng1", 1.0});
  opened->SaveIfChanged();  // logged, not fatal
  EXPECT_TRUE(opened->cache()->Find("gpu|conv c").has_value());
  EXPECT_TRUE(opened->cache()->changed());
}

}  // namespace
}  // namespace coalesce
