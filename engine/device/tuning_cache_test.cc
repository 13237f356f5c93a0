#include "engine/device/tuning_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Keys as the kernels compose them: the device identity, then the search.
constexpr char kH100Conv[] =
    "NVIDIA H100 80GB HBM3, sm_90, cuDNN 91900 | conv n1 c64 h56";
constexpr char kA100Conv[] =
    "NVIDIA A100-SXM4-40GB, sm_80, cuDNN 91900 | conv n1 c64 h56";

// A fresh folder per test, removed afterwards.
class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("coalesce_tuning_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    path_ = (root_ / "tuning.txt").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& contents) {
    std::ofstream out(path_, std::ios::binary);
    out << contents;
  }

  fs::path root_;
  std::string path_;
};

TEST_F(TuningCacheTest, SaveThenLoadRoundTrips) {
  TuningCache saved;
  saved.Insert("conv n1 c64 h56", {/*choice=*/"e12;k3=1,k5=2",
                                   /*microseconds=*/41.5});
  saved.Insert("conv n8 c3 h224", {/*choice=*/"e7", /*microseconds=*/1200});
  ASSERT_TRUE(saved.Save(path_).ok());
  EXPECT_FALSE(fs::exists(absl::StrCat(path_, ".tmp.", ::getpid())));

  TuningCache loaded;
  ASSERT_TRUE(loaded.Load(path_).ok());
  EXPECT_EQ(loaded.size(), 2u);
  std::optional<TuningChoice> found = loaded.Find("conv n1 c64 h56");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->choice, "e12;k3=1,k5=2");
  EXPECT_DOUBLE_EQ(found->microseconds, 41.5);
  found = loaded.Find("conv n8 c3 h224");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->choice, "e7");
  EXPECT_DOUBLE_EQ(found->microseconds, 1200);
  EXPECT_FALSE(loaded.Find("conv n2").has_value());
}

TEST_F(TuningCacheTest, WritesTheDocumentedFormat) {
  TuningCache cache;
  cache.Insert("k", {/*choice=*/"c", /*microseconds=*/2.5});
  ASSERT_TRUE(cache.Save(path_).ok());
  std::ifstream in(path_);
  const std::string contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "coalesce-tuning-cache 2\nk\tc\t2.5\n");
}

// One file holds the winners of every device; the identity that starts
// each key keeps them apart.
TEST_F(TuningCacheTest, EntriesOfTwoDevicesCoexist) {
  TuningCache a100;
  a100.Insert(kA100Conv, {/*choice=*/"e3", /*microseconds=*/10});
  ASSERT_TRUE(a100.Save(path_).ok());

  TuningCache h100;
  ASSERT_TRUE(h100.Load(path_).ok());
  h100.Insert(kH100Conv, {/*choice=*/"e9", /*microseconds=*/4});
  ASSERT_TRUE(h100.Save(path_).ok());

  TuningCache both;
  ASSERT_TRUE(both.Load(path_).ok());
  EXPECT_EQ(both.size(), 2u);
  ASSERT_TRUE(both.Find(kA100Conv).has_value());
  EXPECT_EQ(both.Find(kA100Conv)->choice, "e3");
  ASSERT_TRUE(both.Find(kH100Conv).has_value());
  EXPECT_EQ(both.Find(kH100Conv)->choice, "e9");
}

TEST_F(TuningCacheTest, RejectsAMalformedFileNamingTheLine) {
  Write("coalesce-tuning-cache 2\ngood\te1\t3\nbad\te2\n");
  TuningCache cache;
  absl::Status s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":3:"));
  EXPECT_EQ(cache.size(), 0u) << "nothing merged from a rejected file";
}

TEST_F(TuningCacheTest, RejectsAnotherFormatOrVersion) {
  TuningCache cache;
  // Version 1 (one device per file) is not read.
  Write("coalesce-tuning-cache 1\ndevice\tx\nk\tc\t1\n");
  absl::Status s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":1:"));

  Write("k\tc\t1\n");
  s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":1:"));

  Write("");
  s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":1:"));

  Write("coalesce-tuning-cache 2\nk\tc\tfast\n");
  s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":2:"));

  Write("coalesce-tuning-cache 2\n\tc\t1\n");
  s = cache.Load(path_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":2:"));
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(TuningCacheTest, MissingFileIsNotFound) {
  TuningCache cache;
  EXPECT_EQ(cache.Load(path_).code(), absl::StatusCode::kNotFound);
}

TEST_F(TuningCacheTest, IgnoresKeysAndChoicesThatCouldNotBeSaved) {
  TuningCache cache;
  cache.Insert("conv\tn1", {/*choice=*/"e1", /*microseconds=*/1});
  cache.Insert("conv\nn1", {/*choice=*/"e1", /*microseconds=*/1});
  cache.Insert("conv", {/*choice=*/"e1\te2", /*microseconds=*/1});
  cache.Insert("", {/*choice=*/"e1", /*microseconds=*/1});
  cache.Insert("slow", {/*choice=*/"e1", /*microseconds=*/-1});
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.changed());
  EXPECT_FALSE(cache.Find("conv\tn1").has_value());
}

TEST_F(TuningCacheTest, ChangedSaysWhetherTheFileIsBehind) {
  TuningCache cache;
  EXPECT_FALSE(cache.changed());
  cache.Insert("k", {/*choice=*/"e1", /*microseconds=*/5});
  EXPECT_TRUE(cache.changed());
  ASSERT_TRUE(cache.Save(path_).ok());
  EXPECT_FALSE(cache.changed());
  cache.Insert("k", {/*choice=*/"e1", /*microseconds=*/5});
  EXPECT_FALSE(cache.changed()) << "the same entry again changes nothing";
  cache.Insert("k", {/*choice=*/"e2", /*microseconds=*/4});
  EXPECT_TRUE(cache.changed());

  TuningCache loaded;
  ASSERT_TRUE(loaded.Load(path_).ok());
  EXPECT_FALSE(loaded.changed());
}

TEST_F(TuningCacheTest, LoadKeepsEntriesMeasuredByThisProcess) {
  TuningCache old;
  old.Insert("k", {/*choice=*/"e1", /*microseconds=*/5});
  old.Insert("other", {/*choice=*/"e3", /*microseconds=*/7});
  ASSERT_TRUE(old.Save(path_).ok());

  TuningCache cache;
  cache.Insert("k", {/*choice=*/"e2", /*microseconds=*/4});
  ASSERT_TRUE(cache.Load(path_).ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("k")->choice, "e2");
  EXPECT_EQ(cache.Find("other")->choice, "e3");
  EXPECT_TRUE(cache.changed()) << "e2 is not in the file yet";
}

TEST_F(TuningCacheTest, SaveFailsWhereItCannotWrite) {
  TuningCache cache;
  cache.Insert("k", {/*choice=*/"e1", /*microseconds=*/5});
  const std::string nowhere = (root_ / "missing" / "tuning.txt").string();
  EXPECT_EQ(cache.Save(nowhere).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(cache.changed());
}

// Readers and writers on one cache from several threads: every insert
// lands and every read sees a whole entry (run under TSan to check the
// locking).
TEST_F(TuningCacheTest, ConcurrentInsertAndFind) {
  constexpr int kThreads = 4;
  constexpr int kKeysPerThread = 200;
  TuningCache cache;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < kKeysPerThread; ++i) {
        const std::string key = absl::StrCat("t", t, "k", i);
        cache.Insert(key, {/*choice=*/absl::StrCat("e", i),
                           /*microseconds=*/static_cast<double>(i)});
        std::optional<TuningChoice> mine = cache.Find(key);
        EXPECT_TRUE(mine.has_value());
        // Another thread's entry: absent, or whole.
        std::optional<TuningChoice> theirs =
            cache.Find(absl::StrCat("t", (t + 1) % kThreads, "k", i));
        if (theirs.has_value()) {
          EXPECT_EQ(theirs->choice, absl::StrCat("e", i));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(cache.size(), static_cast<size_t>(kThreads * kKeysPerThread));
  EXPECT_TRUE(cache.changed());
}

}  // namespace
}  // namespace coalesce
