#include "kernels/cpu/cast.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

TEST(CastTest, FloatToIntegersTruncatesTowardZero) {
  const std::vector<float> in = {1.7f, -1.7f, 0.0f, 42.0f};
  std::vector<int64_t> i64(4);
  Cast(CastType::kFloat32, in.data(), CastType::kInt64, 4, i64.data());
  EXPECT_EQ(i64, (std::vector<int64_t>{1, -1, 0, 42}));
  std::vector<int32_t> i32(4);
  Cast(CastType::kFloat32, in.data(), CastType::kInt32, 4, i32.data());
  EXPECT_EQ(i32, (std::vector<int32_t>{1, -1, 0, 42}));
}

TEST(CastTest, ToAndFromBool) {
  const std::vector<float> in = {0.5f, 0.0f, -2.0f, NAN};
  uint8_t b[4];
  Cast(CastType::kFloat32, in.data(), CastType::kBool, 4, b);
  EXPECT_EQ(std::vector<uint8_t>(b, b + 4), (std::vector<uint8_t>{1, 0, 1, 1}));
  const uint8_t raw[3] = {0, 1, 7};
  std::vector<float> f(3);
  Cast(CastType::kBool, raw, CastType::kFloat32, 3, f.data());
  EXPECT_EQ(f, (std::vector<float>{0, 1, 1}));
  std::vector<int64_t> i(3);
  Cast(CastType::kBool, raw, CastType::kInt64, 3, i.data());
  EXPECT_EQ(i, (std::vector<int64_t>{0, 1, 1}));
}

TEST(CastTest, IntegerWidths) {
  const std::vector<int64_t> in = {-5, 3000000000LL, 7};
  std::vector<int32_t> narrow(3);
  Cast(CastType::kInt64, in.data(), CastType::kInt32, 3, narrow.data());
  EXPECT_EQ(narrow[0], -5);
  EXPECT_EQ(narrow[2], 7);
  std::vector<int64_t> wide(3);
  Cast(CastType::kInt32, narrow.data(), CastType::kInt64, 3, wide.data());
  EXPECT_EQ(wide[0], -5);
  std::vector<float> f(3);
  Cast(CastType::kInt64, in.data(), CastType::kFloat32, 3, f.data());
  EXPECT_EQ(f[1], 3e9f);
}

}  // namespace
}  // namespace coalesce::kernels

namespace coalesce::kernels {
namespace {

constexpr CastType kAllTypes[] = {
    CastType::kFloat32, CastType::kInt64,   CastType::kInt32,
    CastType::kBool,    CastType::kInt8,    CastType::kUint8,
    CastType::kInt16,   CastType::kUint16,  CastType::kUint32,
    CastType::kUint64,  CastType::kFloat64, CastType::kFloat16,
    CastType::kBFloat16};

template <typename T>
std::vector<uint8_t> BytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<uint8_t> Encode(const std::vector<int>& v) {
  std::vector<T> typed;
  for (int x : v) typed.push_back(static_cast<T>(x));
  return BytesOf(typed);
}

// The bit patterns of 0, 1, 7 and 100, written out by hand.
uint16_t HalfOf(int v) {
  return v == 0 ? 0x0000 : v == 1 ? 0x3c00 : v == 7 ? 0x4700 : 0x5640;
}
uint16_t Bf16Of(int v) {
  return v == 0 ? 0x0000 : v == 1 ? 0x3f80 : v == 7 ? 0x40e0 : 0x42c8;
}

// `v` (values among 0, 1, 7, 100) as the bytes of `type`.
std::vector<uint8_t> Encode(CastType type, const std::vector<int>& v) {
  std::vector<uint16_t> bits;
  switch (type) {
    case CastType::kFloat32:
      return Encode<float>(v);
    case CastType::kInt64:
      return Encode<int64_t>(v);
    case CastType::kInt32:
      return Encode<int32_t>(v);
    case CastType::kBool:
      return Encode<uint8_t>(v);
    case CastType::kInt8:
      return Encode<int8_t>(v);
    case CastType::kUint8:
      return Encode<uint8_t>(v);
    case CastType::kInt16:
      return Encode<int16_t>(v);
    case CastType::kUint16:
      return Encode<uint16_t>(v);
    case CastType::kUint32:
      return Encode<uint32_t>(v);
    case CastType::kUint64:
      return Encode<uint64_t>(v);
    case CastType::kFloat64:
      return Encode<double>(v);
    case CastType::kFloat16:
      for (int x : v) bits.push_back(HalfOf(x));
      return BytesOf(bits);
    case CastType::kBFloat16:
      for (int x : v) bits.push_back(Bf16Of(x));
      return BytesOf(bits);
  }
  return {};
}

TEST(CastTest, EveryPairOnValuesAllTypesHold) {
  const std::vector<int> values = {0, 1, 7, 100};
  const std::vector<int> as_bool = {0, 1, 1, 1};
  for (CastType from : kAllTypes) {
    for (CastType to : kAllTypes) {
      const bool via_bool = from == CastType::kBool || to == CastType::kBool;
      const std::vector<uint8_t> src =
          Encode(from, from == CastType::kBool ? as_bool : values);
      std::vector<uint8_t> dst(4 * CastTypeByteSize(to), 0xee);
      Cast(from, src.data(), to, 4, dst.data());
      EXPECT_EQ(dst, Encode(to, via_bool ? as_bool : values))
          << static_cast<int>(from) << " -> " << static_cast<int>(to);
    }
  }
}

TEST(CastTest, ByteSizes) {
  EXPECT_EQ(CastTypeByteSize(CastType::kBool), 1u);
  EXPECT_EQ(CastTypeByteSize(CastType::kUint8), 1u);
  EXPECT_EQ(CastTypeByteSize(CastType::kInt16), 2u);
  EXPECT_EQ(CastTypeByteSize(CastType::kFloat16), 2u);
  EXPECT_EQ(CastTypeByteSize(CastType::kBFloat16), 2u);
  EXPECT_EQ(CastTypeByteSize(CastType::kUint32), 4u);
  EXPECT_EQ(CastTypeByteSize(CastType::kFloat64), 8u);
}

template <typename To, typename From>
std::vector<To> CastAll(CastType from, const std::vector<From>& in,
                        CastType to) {
  std::vector<To> out(in.size());
  Cast(from, in.data(), to, static_cast<int64_t>(in.size()), out.data());
  return out;
}

TEST(CastTest, FloatToNarrowIntegersTruncatesAndSaturates) {
  const std::vector<float> in = {2.7f, -2.7f, 200.0f, -200.0f, NAN};
  EXPECT_EQ((CastAll<int8_t>(CastType::kFloat32, in, CastType::kInt8)),
            (std::vector<int8_t>{2, -2, 127, -128, 0}));
  EXPECT_EQ((CastAll<uint8_t>(CastType::kFloat32, in, CastType::kUint8)),
            (std::vector<uint8_t>{2, 0, 200, 0, 0}));
  EXPECT_EQ((CastAll<int16_t>(CastType::kFloat32, in, CastType::kInt16)),
            (std::vector<int16_t>{2, -2, 200, -200, 0}));
  const std::vector<double> big = {1e19, -1.5, 1e300, 4294967295.9};
  EXPECT_EQ((CastAll<uint64_t>(CastType::kFloat64, big, CastType::kUint64)),
            (std::vector<uint64_t>{10000000000000000000ull, 0,
                                   18446744073709551615ull, 4294967295ull}));
  EXPECT_EQ((CastAll<uint32_t>(CastType::kFloat64, big, CastType::kUint32)),
            (std::vector<uint32_t>{4294967295u, 0, 4294967295u, 4294967295u}));
  EXPECT_EQ((CastAll<int64_t>(CastType::kFloat64, big, CastType::kInt64)),
            (std::vector<int64_t>{9223372036854775807ll, -1,
                                  9223372036854775807ll, 4294967295ll}));
}

TEST(CastTest, IntegersWrapModulo) {
  const std::vector<int32_t> in = {300, -1, -129, 65536 + 5};
  EXPECT_EQ((CastAll<int8_t>(CastType::kInt32, in, CastType::kInt8)),
            (std::vector<int8_t>{44, -1, 127, 5}));
  EXPECT_EQ((CastAll<uint8_t>(CastType::kInt32, in, CastType::kUint8)),
            (std::vector<uint8_t>{44, 255, 127, 5}));
  EXPECT_EQ((CastAll<uint16_t>(CastType::kInt32, in, CastType::kUint16)),
            (std::vector<uint16_t>{300, 65535, 65407, 5}));
  const std::vector<uint64_t> u = {9223372036854775808ull,
                                   18446744073709551615ull};
  EXPECT_EQ((CastAll<int64_t>(CastType::kUint64, u, CastType::kInt64)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1}));
  const std::vector<int8_t> s8 = {-128, -1, 127};
  EXPECT_EQ((CastAll<int16_t>(CastType::kInt8, s8, CastType::kInt16)),
            (std::vector<int16_t>{-128, -1, 127}));
  EXPECT_EQ((CastAll<uint32_t>(CastType::kInt8, s8, CastType::kUint32)),
            (std::vector<uint32_t>{4294967168u, 4294967295u, 127u}));
  const std::vector<uint8_t> u8 = {200, 255};
  EXPECT_EQ((CastAll<int8_t>(CastType::kUint8, u8, CastType::kInt8)),
            (std::vector<int8_t>{-56, -1}));
  EXPECT_EQ((CastAll<int64_t>(CastType::kUint8, u8, CastType::kInt64)),
            (std::vector<int64_t>{200, 255}));
}

TEST(CastTest, IntegersToFloatsRoundToNearest) {
  const std::vector<int64_t> in = {9007199254740993ll, 16777217, -3};
  EXPECT_EQ((CastAll<double>(CastType::kInt64, in, CastType::kFloat64)),
            (std::vector<double>{9007199254740992.0, 16777217.0, -3.0}));
  EXPECT_EQ((CastAll<float>(CastType::kInt64, in, CastType::kFloat32))[1],
            16777216.0f);
  const std::vector<uint64_t> max = {18446744073709551615ull};
  EXPECT_EQ((CastAll<float>(CastType::kUint64, max, CastType::kFloat32))[0],
            18446744073709551616.0f);
  const std::vector<int32_t> i32 = {2049, 70000, -2};
  EXPECT_EQ((CastAll<uint16_t>(CastType::kInt32, i32, CastType::kFloat16)),
            (std::vector<uint16_t>{0x6800, 0x7c00, 0xc000}));
  EXPECT_EQ((CastAll<uint16_t>(CastType::kInt32, i32, CastType::kBFloat16)),
            (std::vector<uint16_t>{0x4500, 0x4789, 0xc000}));
}

TEST(CastTest, HalfTypesToOthers) {
  // -2.5, 300, 65504, -0, NaN as float16.
  const std::vector<uint16_t> h = {0xc100, 0x5cb0, 0x7bff, 0x8000, 0x7e00};
  EXPECT_EQ((CastAll<int32_t>(CastType::kFloat16, h, CastType::kInt32)),
            (std::vector<int32_t>{-2, 300, 65504, 0, 0}));
  EXPECT_EQ((CastAll<int16_t>(CastType::kFloat16, h, CastType::kInt16)),
            (std::vector<int16_t>{-2, 300, 32767, 0, 0}));
  EXPECT_EQ((CastAll<uint8_t>(CastType::kFloat16, h, CastType::kUint8)),
            (std::vector<uint8_t>{0, 255, 255, 0, 0}));
  EXPECT_EQ((CastAll<uint8_t>(CastType::kFloat16, h, CastType::kBool)),
            (std::vector<uint8_t>{1, 1, 1, 0, 1}));
  const auto d = CastAll<double>(CastType::kFloat16, h, CastType::kFloat64);
  EXPECT_EQ(d[0], -2.5);
  EXPECT_EQ(d[2], 65504.0);
  EXPECT_TRUE(std::isnan(d[4]));
  // float16 -> bfloat16: -2.5, 300, 65504 (rounds to 65536), -0, NaN.
  const auto b = CastAll<uint16_t>(CastType::kFloat16, h, CastType::kBFloat16);
  EXPECT_EQ(b[0], 0xc020);
  EXPECT_EQ(b[1], 0x4396);
  EXPECT_EQ(b[2], 0x4780);
  EXPECT_EQ(b[3], 0x8000);
  EXPECT_EQ(b[4] & 0x7f80, 0x7f80);
  EXPECT_NE(b[4] & 0x7f, 0);
  // bfloat16 3.140625 and -100 back to float16 and float.
  const std::vector<uint16_t> bf = {0x4049, 0xc2c8};
  EXPECT_EQ((CastAll<uint16_t>(CastType::kBFloat16, bf, CastType::kFloat16)),
            (std::vector<uint16_t>{0x4248, 0xd640}));
  EXPECT_EQ((CastAll<float>(CastType::kBFloat16, bf, CastType::kFloat32)),
            (std::vector<float>{3.140625f, -100.0f}));
}

TEST(CastTest, DoubleToNarrowFloats) {
  const std::vector<double> in = {0.1, 1e300, -1e-300, 65519.0};
  const auto f = CastAll<float>(CastType::kFloat64, in, CastType::kFloat32);
  EXPECT_EQ(f[0], 0.1f);
  EXPECT_EQ(f[1], INFINITY);
  EXPECT_TRUE(f[2] == 0.0f && std::signbit(f[2]));
  EXPECT_EQ((CastAll<uint16_t>(CastType::kFloat64, in, CastType::kFloat16)),
            (std::vector<uint16_t>{0x2e66, 0x7c00, 0x8000, 0x7bff}));
}

TEST(CastTest, SameTypeCopiesAndBoolNormalizes) {
  const std::vector<int16_t> in = {-7, 8};
  EXPECT_EQ((CastAll<int16_t>(CastType::kInt16, in, CastType::kInt16)), in);
  const std::vector<uint8_t> b = {0, 2, 255};
  EXPECT_EQ((CastAll<uint8_t>(CastType::kBool, b, CastType::kBool)),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ((CastAll<uint16_t>(CastType::kBool, b, CastType::kFloat16)),
            (std::vector<uint16_t>{0, 0x3c00, 0x3c00}));
}

}  // namespace
}  // namespace coalesce::kernels
