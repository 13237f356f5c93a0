#include "engine/ops/string_conversion.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;

template <typename T>
std::vector<std::string> ToText(DataType type, const std::vector<T>& values) {
  StringStore store;
  std::vector<StringRef> refs(values.size());
  absl::Status s =
      NumbersToStrings(type, values.data(), static_cast<int64_t>(values.size()),
                       store, refs.data());
  EXPECT_TRUE(s.ok()) << s;
  std::vector<std::string> out;
  for (const StringRef& r : refs) out.emplace_back(r.view());
  return out;
}

std::vector<StringRef> Refs(const std::vector<std::string>& strings) {
  std::vector<StringRef> refs;
  for (const std::string& s : strings) refs.push_back({s.data(), s.size()});
  return refs;
}

template <typename T>
absl::StatusOr<std::vector<T>> FromText(const std::vector<std::string>& strings,
                                        DataType type) {
  const std::vector<StringRef> refs = Refs(strings);
  std::vector<T> out(strings.size());
  absl::Status s = StringsToNumbers(
      refs.data(), static_cast<int64_t>(refs.size()), type, out.data());
  if (!s.ok()) return s;
  return out;
}

TEST(StringConversionTest, IntegersInPlainDecimal) {
  EXPECT_EQ(ToText(DataType::kInt8, std::vector<int8_t>{-128, 0, 127}),
            (std::vector<std::string>{"-128", "0", "127"}));
  EXPECT_EQ(ToText(DataType::kUint8, std::vector<uint8_t>{255, 7}),
            (std::vector<std::string>{"255", "7"}));
  EXPECT_EQ(ToText(DataType::kInt64,
                   std::vector<int64_t>{-9223372036854775807ll - 1, 42}),
            (std::vector<std::string>{"-9223372036854775808", "42"}));
  EXPECT_EQ(
      ToText(DataType::kUint64, std::vector<uint64_t>{18446744073709551615ull}),
      (std::vector<std::string>{"18446744073709551615"}));
  EXPECT_EQ(ToText(DataType::kBool, std::vector<uint8_t>{1, 0}),
            (std::vector<std::string>{"1", "0"}));
}

TEST(StringConversionTest, FloatsInShortestRoundTripForm) {
  EXPECT_EQ(
      ToText(DataType::kFp32, std::vector<float>{0.1f, 100.0f, 1e20f, -1.5e-7f,
                                                 0.0f, 123456792.0f}),
      (std::vector<std::string>{"0.1", "100", "1e+20", "-1.5e-07", "0",
                                "123456792"}));
  EXPECT_EQ(ToText(DataType::kFp64, std::vector<double>{0.1, 1.0 / 3.0, -2.5}),
            (std::vector<std::string>{"0.1", "0.3333333333333333", "-2.5"}));
  EXPECT_EQ(
      ToText(DataType::kFp32, std::vector<float>{NAN, INFINITY, -INFINITY}),
      (std::vector<std::string>{"NaN", "INF", "-INF"}));
  // float16 0.1 holds 0.0999755859375; bfloat16 3.140625.
  EXPECT_EQ(ToText(DataType::kFp16, std::vector<uint16_t>{0x2e66, 0xc100}),
            (std::vector<std::string>{"0.099975586", "-2.5"}));
  EXPECT_EQ(ToText(DataType::kBf16, std::vector<uint16_t>{0x4049}),
            (std::vector<std::string>{"3.140625"}));
}

TEST(StringConversionTest, ParsesWholeIntegersInRange) {
  auto i32 = FromText<int32_t>({"-17", "+42", "2147483647"}, DataType::kInt32);
  ASSERT_TRUE(i32.ok()) << i32.status();
  EXPECT_EQ(*i32, (std::vector<int32_t>{-17, 42, 2147483647}));
  auto u64 = FromText<uint64_t>({"18446744073709551615"}, DataType::kUint64);
  ASSERT_TRUE(u64.ok());
  EXPECT_EQ((*u64)[0], 18446744073709551615ull);
  for (const char* bad :
       {"3.5", "1e3", " 7", "7 ", "", "x", "2147483648", "--1", "+-1"}) {
    auto r = FromText<int32_t>({bad}, DataType::kInt32);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(FromText<uint8_t>({"256"}, DataType::kUint8).ok());
  EXPECT_FALSE(FromText<uint16_t>({"-1"}, DataType::kUint16).ok());
  auto i8 = FromText<int8_t>({"-128"}, DataType::kInt8);
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ((*i8)[0], -128);
}

TEST(StringConversionTest, ParsesFloats) {
  auto f = FromText<float>({"0.1", "-2.5e3", "inf", "-INF", "1e-50", "1e50"},
                           DataType::kFp32);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, (std::vector<float>{0.1f, -2500.0f, INFINITY, -INFINITY, 0.0f,
                                    INFINITY}));
  auto nan = FromText<double>({"NaN", "nan"}, DataType::kFp64);
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan((*nan)[0]) && std::isnan((*nan)[1]));
  auto d = FromText<double>({"0.1", "+7"}, DataType::kFp64);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<double>{0.1, 7.0}));
  auto h = FromText<uint16_t>({"0.1", "65520", "-2.5"}, DataType::kFp16);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, (std::vector<uint16_t>{0x2e66, 0x7c00, 0xc100}));
  auto b = FromText<uint16_t>({"3.14159274"}, DataType::kBf16);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], 0x4049);
  EXPECT_FALSE(FromText<float>({"1.5x"}, DataType::kFp32).ok());
  EXPECT_FALSE(FromText<float>({"0x10"}, DataType::kFp32).ok());
}

TEST(StringConversionTest, ParsesBools) {
  auto b =
      FromText<uint8_t>({"true", "FALSE", "0", "2.5", "-0"}, DataType::kBool);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, (std::vector<uint8_t>{1, 0, 0, 1, 0}));
  EXPECT_FALSE(FromText<uint8_t>({"yes"}, DataType::kBool).ok());
}

TEST(StringConversionTest, FailureQuotesTheStringAndType) {
  auto r = FromText<int64_t>({"12", "twelve\n"}, DataType::kInt64);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("\"twelve\\n\" as INT64"));
  auto long_one = FromText<int64_t>({std::string(100, 'z')}, DataType::kInt64);
  EXPECT_THAT(std::string(long_one.status().message()), HasSubstr("...\""));
}

TEST(StringConversionTest, RoundTripsEveryFloatWeWrite) {
  const std::vector<float> values = {
      0.1f, 1.0f / 3.0f, 3.4028235e38f, 1.17549435e-38f, 1e-45f, -7.0f};
  const std::vector<std::string> text = ToText(DataType::kFp32, values);
  auto back = FromText<float>(text, DataType::kFp32);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, values);
}

TEST(StringConversionTest, StringsAreNotNumeric) {
  StringStore store;
  StringRef out;
  const StringRef in{"a", 1};
  EXPECT_EQ(NumbersToStrings(DataType::kBytes, &in, 1, store, &out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StringsToNumbers(&in, 1, DataType::kBytes, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
