#include "kernels/cpu/cast.h"

#include <cmath>
#include <cstdint>
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
