#include "kernels/cpu/transpose.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/transpose_primitive.h"

namespace coalesce::kernels {
namespace {

using Dims = std::vector<int64_t>;

// Reference: for each input multi-index, compute the output flat index.
template <typename T>
std::vector<T> NaiveTranspose(const std::vector<T>& in, const Dims& dims,
                              const Dims& perm) {
  const size_t rank = dims.size();
  Dims out_dims(rank);
  for (size_t i = 0; i < rank; ++i) out_dims[i] = dims[perm[i]];
  std::vector<T> out(in.size());
  Dims idx(rank, 0);
  for (size_t flat = 0; flat < in.size(); ++flat) {
    int64_t o = 0;
    for (size_t i = 0; i < rank; ++i) o = o * out_dims[i] + idx[perm[i]];
    out[o] = in[flat];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename T>
void Check(const Dims& dims, const Dims& perm) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<T> in(n);
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<T>(i * 3 + 1);
  std::vector<T> out(n);
  Transpose(in.data(), dims, perm, sizeof(T), out.data());
  EXPECT_EQ(out, NaiveTranspose(in, dims, perm));
}

TEST(TransposeTest, TwoD) { Check<float>({3, 5}, {1, 0}); }
TEST(TransposeTest, Identity) { Check<float>({2, 3, 4}, {0, 1, 2}); }
TEST(TransposeTest, ThreeDRotations) {
  Check<float>({2, 3, 4}, {2, 0, 1});
  Check<float>({2, 3, 4}, {1, 2, 0});
  Check<float>({2, 3, 4}, {2, 1, 0});
}
TEST(TransposeTest, FourDInt64) { Check<int64_t>({2, 3, 4, 5}, {0, 2, 3, 1}); }
// Permutations that are a batched matrix transpose take the tiled path:
// NCHW <-> NHWC, with sizes that are not multiples of the tile, size-1 axes,
// and a plain 2-D transpose large enough to run in parallel.
TEST(TransposeTest, TiledMatrixTransposes) {
  Check<float>({2, 35, 9, 7}, {0, 2, 3, 1});
  Check<float>({2, 9, 7, 35}, {0, 3, 1, 2});
  Check<float>({1, 64, 1, 40}, {0, 2, 3, 1});
  Check<float>({300, 257}, {1, 0});
  Check<int32_t>({3, 1, 70, 33}, {2, 1, 0, 3});
}

// The oneDNN reorder against the naive reference, float32, ranks 2 to 5.
TEST(TransposePrimitiveTest, MatchesTheReference) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{2, 35, 9, 7}, {0, 2, 3, 1}}, {{2, 9, 7, 35}, {0, 3, 1, 2}},
      {{300, 257}, {1, 0}},          {{5, 6, 7}, {2, 0, 1}},
      {{3, 4, 5, 6}, {3, 1, 0, 2}},  {{2, 3, 4, 5, 6}, {0, 2, 3, 4, 1}}};
  for (const auto& [dims, perm] : cases) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> in(n), out(n, -1.0f);
    for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i * 3 + 1);
    auto primitive = TransposePrimitive::Create(dims, perm);
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    ASSERT_TRUE((*primitive)->Run(in.data(), out.data()).ok());
    EXPECT_EQ(out, NaiveTranspose(in, dims, perm))
        << ::testing::PrintToString(perm);
  }
}

TEST(TransposePrimitiveTest, RefusesWhatIsNotAPermutation) {
  EXPECT_FALSE(TransposePrimitive::Create({2, 3}, {0, 0}).ok());
  EXPECT_FALSE(TransposePrimitive::Create({2, 3}, {0}).ok());
  EXPECT_FALSE(
      TransposePrimitive::Create({1, 1, 1, 1, 1, 1, 1}, {0, 1, 2, 3, 4, 5, 6})
          .ok());
}

TEST(TransposeTest, OddElementSize) {
  struct Three {
    uint8_t b[3];
  };
  const Dims dims = {2, 3};
  std::vector<uint8_t> in(18), out(18);
  for (int i = 0; i < 18; ++i) in[i] = i;
  Transpose(in.data(), dims, {1, 0}, 3, out.data());
  // Output element (j, i) = input element (i, j), 3 bytes each.
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int b = 0; b < 3; ++b)
        EXPECT_EQ(out[(j * 2 + i) * 3 + b], in[(i * 3 + j) * 3 + b]);
    }
  }
}
TEST(TransposeTest, ScalarAndEmpty) {
  float s = 4, o = 0;
  Transpose(&s, {}, {}, sizeof(float), &o);
  EXPECT_EQ(o, 4);
  Transpose(nullptr, {0, 3}, {1, 0}, sizeof(float), nullptr);
}

}  // namespace
}  // namespace coalesce::kernels
