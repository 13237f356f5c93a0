#include "kernels/cpu/compare.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

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
