#include "engine/string_store.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

TEST(StringStoreTest, KeepsCopiesUntilClear) {
  StringStore store;
  std::string source = "hello";
  absl::StatusOr<StringRef> a = store.Add(source);
  ASSERT_TRUE(a.ok());
  source = "HELLO";
  EXPECT_EQ(a->view(), "hello");
  absl::StatusOr<StringRef> empty = store.Add("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size, 0u);
  EXPECT_EQ(empty->data, nullptr);
  EXPECT_EQ(store.bytes_used(), 5u);
}

TEST(StringStoreTest, ManyAndLargeStringsStayValid) {
  StringStore store;
  std::vector<StringRef> refs;
  std::vector<std::string> want;
  for (int i = 0; i < 5000; ++i) {
    want.push_back(std::string(1 + i % 97, static_cast<char>('a' + i % 26)));
    if (i % 1000 == 0) want.back() = std::string(100000, 'L');  // > a chunk
    absl::StatusOr<StringRef> r = store.Add(want.back());
    ASSERT_TRUE(r.ok());
    refs.push_back(*r);
  }
  for (size_t i = 0; i < refs.size(); ++i)
    ASSERT_EQ(refs[i].view(), want[i]) << i;
}

TEST(StringStoreTest, ClearReusesMemory) {
  StringStore store;
  absl::StatusOr<StringRef> first = store.Add("abc");
  ASSERT_TRUE(first.ok());
  store.Clear();
  EXPECT_EQ(store.bytes_used(), 0u);
  absl::StatusOr<StringRef> again = store.Add("xyz");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data, first->data);
  EXPECT_EQ(again->view(), "xyz");
}

}  // namespace
}  // namespace coalesce
