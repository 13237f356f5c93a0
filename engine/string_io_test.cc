#include "engine/string_io.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;

// Little-endian length prefix, written out byte by byte.
std::string Length(uint32_t n) {
  return std::string{
      static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
      static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
}

TEST(StringIoTest, ParsesElementsInPlace) {
  const std::string data =
      Length(3) + "abc" + Length(0) + Length(2) + std::string("\0\xff", 2);
  std::vector<StringRef> out(3);
  ASSERT_TRUE(
      ParseSerializedStrings(data.data(), data.size(), 3, out.data()).ok());
  EXPECT_EQ(out[0].view(), "abc");
  EXPECT_EQ(out[0].data, data.data() + 4);  // no copy
  EXPECT_EQ(out[1].view(), "");
  EXPECT_EQ(out[2].view(), std::string("\0\xff", 2));
}

TEST(StringIoTest, EmptyTensorIsAnEmptyBuffer) {
  EXPECT_TRUE(ParseSerializedStrings(nullptr, 0, 0, nullptr).ok());
}

TEST(StringIoTest, LengthBeyondTheBufferFails) {
  const std::string data = Length(10) + "short";
  std::vector<StringRef> out(1);
  absl::Status s =
      ParseSerializedStrings(data.data(), data.size(), 1, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("length 10"));
  // A length prefix cut short.
  const std::string cut = Length(1) + "a" + std::string("\x01\x00", 2);
  s = ParseSerializedStrings(cut.data(), cut.size(), 2, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(StringIoTest, TooFewElementsFail) {
  const std::string data = Length(1) + "a";
  std::vector<StringRef> out(2);
  absl::Status s =
      ParseSerializedStrings(data.data(), data.size(), 2, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("hold 1 elements"));
}

TEST(StringIoTest, TrailingBytesFail) {
  const std::string data = Length(1) + "a" + "xyz";
  std::vector<StringRef> out(1);
  absl::Status s =
      ParseSerializedStrings(data.data(), data.size(), 1, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("3 bytes left over"));
}

TEST(StringIoTest, SerializesWithLittleEndianLengths) {
  const std::string big(300, 'q');
  const std::vector<StringRef> in = {
      {"hi", 2}, {nullptr, 0}, {big.data(), big.size()}};
  absl::StatusOr<size_t> size = SerializedStringsSize(in.data(), 3);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 4 + 2 + 4 + 4 + 300u);
  std::string out(*size, '?');
  SerializeStrings(in.data(), 3, out.data());
  EXPECT_EQ(
      out, Length(2) + "hi" + Length(0) + std::string("\x2c\x01\0\0", 4) + big);
}

TEST(StringIoTest, StringsOver4GiBCannotBeSerialized) {
  // The size is checked before any byte is read.
  const StringRef huge{nullptr, uint64_t{1} << 32};
  absl::StatusOr<size_t> size = SerializedStringsSize(&huge, 1);
  EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument);
  const StringRef max{nullptr, 0xffffffffu};
  EXPECT_TRUE(SerializedStringsSize(&max, 1).ok());
}

}  // namespace
}  // namespace coalesce
