#include "kernels/cpu/compare.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/half.h"

namespace coalesce::kernels {
namespace {

TEST(CompareTest, BroadcastLessMatchesNaive) {
  // a [2,1,3], b [4,1] -> [2,4,3]
  std::vector<int64_t> a(6), b(4);
  for (int i = 0; i < 6; ++i) a[i] = i;
  for (int i = 0; i < 4; ++i) b[i] = i + 1;
  bool out[24];
  BroadcastCompare<int64_t>(CompareOp::kLess, a.data(), {2, 1, 3}, b.data(),
                            {4, 1}, {2, 4, 3}, out);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(out[(i * 4 + j) * 3 + k], a[i * 3 + k] < b[j])
            << i << "," << j << "," << k;
}

TEST(CompareTest, EqualAndGreaterOnFloatsAndScalars) {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f};
  const float two = 2.0f;
  bool out[3];
  BroadcastCompare<float>(CompareOp::kEqual, a.data(), {3}, &two, {}, {3}, out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{0, 1, 0}));
  BroadcastCompare<float>(CompareOp::kGreater, a.data(), {3}, &two, {}, {3},
                          out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{0, 0, 1}));
}

TEST(CompareTest, NewIntegerTypesAndDouble) {
  const std::vector<uint64_t> a = {18446744073709551615ull, 0, 5};
  const uint64_t five = 5;
  bool out[3];
  BroadcastCompare<uint64_t>(CompareOp::kGreater, a.data(), {3}, &five, {}, {3},
                             out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{1, 0, 0}));
  const std::vector<int8_t> s = {-128, 0, 127};
  const int8_t zero = 0;
  BroadcastCompare<int8_t>(CompareOp::kLess, s.data(), {3}, &zero, {}, {3},
                           out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{1, 0, 0}));
  const std::vector<double> d = {0.1, 0.30000000000000004, 0.3};
  const double third = 0.3;
  BroadcastCompare<double>(CompareOp::kEqual, d.data(), {3}, &third, {}, {3},
                           out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{0, 0, 1}));
}

TEST(CompareTest, HalfTypesCompareAsFloats) {
  // float16: 0, -0, NaN, 1.0 against 0, 0, NaN, 2.0.
  const std::vector<Float16> a = {{0x0000}, {0x8000}, {0x7e00}, {0x3c00}};
  const std::vector<Float16> b = {{0x0000}, {0x0000}, {0x7e00}, {0x4000}};
  bool out[4];
  BroadcastCompare<Float16>(CompareOp::kEqual, a.data(), {4}, b.data(), {4},
                            {4}, out);
  EXPECT_EQ(std::vector<bool>(out, out + 4), (std::vector<bool>{1, 1, 0, 0}));
  BroadcastCompare<Float16>(CompareOp::kLess, a.data(), {4}, b.data(), {4}, {4},
                            out);
  EXPECT_EQ(std::vector<bool>(out, out + 4), (std::vector<bool>{0, 0, 0, 1}));
  // bfloat16: -1 < 1, 3.140625 > 3.
  const std::vector<BFloat16> c = {{0xbf80}, {0x4049}};
  const std::vector<BFloat16> d = {{0x3f80}, {0x4040}};
  BroadcastCompare<BFloat16>(CompareOp::kGreater, c.data(), {2}, d.data(), {2},
                             {2}, out);
  EXPECT_EQ(std::vector<bool>(out, out + 2), (std::vector<bool>{0, 1}));
}

bool SameFirstByte(const void* a, const void* b) {
  return *static_cast<const char*>(a) == *static_cast<const char*>(b);
}

TEST(CompareTest, EqualByCallbackBroadcasts) {
  // Three-byte elements: a [2] against b [3, 1] -> [3, 2].
  const char a[] = {'x', 1, 2, 'y', 3, 4};
  const char b[] = {'y', 0, 0, 'x', 0, 0, 'z', 0, 0};
  bool out[6];
  BroadcastEqualBy(a, {2}, b, {3, 1}, {3, 2}, 3, &SameFirstByte, out);
  EXPECT_EQ(std::vector<bool>(out, out + 6),
            (std::vector<bool>{0, 1, 1, 0, 0, 0}));
}

TEST(CompareTest, NotAndWhere) {
  const bool in[3] = {true, false, true};
  bool out[3];
  LogicalNot(in, 3, out);
  EXPECT_EQ(std::vector<bool>(out, out + 3), (std::vector<bool>{0, 1, 0}));
  // cond [2,1], x [3], y scalar -> [2,3]
  const bool cond[2] = {true, false};
  const std::vector<float> x = {1, 2, 3};
  const float y = -1;
  std::vector<float> got(6);
  BroadcastWhere(cond, {2, 1}, x.data(), {3}, &y, {}, {2, 3}, sizeof(float),
                 got.data());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, -1, -1, -1}));
}

}  // namespace
}  // namespace coalesce::kernels
