// The CUDA kernels' math, compiled for the host: activations and broadcast
// indexing against double-precision references, and the Softmax partial
// row combination against a direct computation, in several split orders;
// float16 conversions against a decoding in double, over every half; the
// typed kernels' integer, predicate and Cast rules on chosen edge values;
// NHWC pooling and per-channel maps against the NCHW math and direct
// computations, over float32 and float16 storage; fused attention's online
// softmax over key tiles of several sizes against a direct two-pass
// computation in double, masked rows, its tiling, block numbering and
// vector-load check.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/attention_math.h"
#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/float_storage.h"
#include "kernels/cuda/gather_math.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/indexing_math.h"
#include "kernels/cuda/layer_norm_math.h"
#include "kernels/cuda/pool_math.h"
#include "kernels/cuda/quantize_math.h"
#include "kernels/cuda/resize_math.h"
#include "kernels/cuda/softmax_math.h"
#include "kernels/cuda/transpose_math.h"
#include "kernels/cuda/typed_math.h"

namespace coalesce::kernels::cuda {
namespace {

// LeakyRelu's slope and Clip's bounds in the tests below.
constexpr float kAlpha = -0.75f, kBeta = 2.5f;

double Reference(Activation act, double x) {
  switch (act) {
    case Activation::kLeakyRelu:
      return x >= 0 ? x : kAlpha * x;
    case Activation::kClip:
      return std::min<double>(std::max<double>(x, kAlpha), kBeta);
    case Activation::kErf:
      return std::erf(x);
    case Activation::kPow:
      return std::pow(x, double{kAlpha});
    case Activation::kSqrt:
      return std::sqrt(x);
    case Activation::kExp:
      return std::exp(x);
    case Activation::kIdentity:
      return x;
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kGeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x *
             (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kHardSigmoid:
      return std::clamp(kAlpha * x + kBeta, 0.0, 1.0);
    case Activation::kHardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case Activation::kReciprocal:
      return 1 / x;
    case Activation::kNeg:
      return -x;
    case Activation::kAbs:
      return std::fabs(x);
    case Activation::kSin:
      return std::sin(x);
    case Activation::kCos:
      return std::cos(x);
    case Activation::kFloor:
      return std::floor(x);
    case Activation::kCeil:
      return std::ceil(x);
    case Activation::kSilu:  // alpha: the sigmoid's scale
      return x / (1 + std::exp(-kAlpha * x));
  }
  return NAN;
}

TEST(CudaMathTest, ActivationsMatchDoublePrecision) {
  for (Activation act :
       {Activation::kIdentity, Activation::kRelu, Activation::kSigmoid,
        Activation::kTanh, Activation::kGeluErf, Activation::kGeluTanh,
        Activation::kLeakyRelu, Activation::kClip, Activation::kErf,
        Activation::kExp, Activation::kHardSigmoid, Activation::kHardSwish,
        Activation::kNeg, Activation::kAbs, Activation::kSin, Activation::kCos,
        Activation::kFloor, Activation::kCeil, Activation::kSilu}) {
    for (int k = -1024; k <= 1024; ++k) {
      const float x = k / 64.0f;  // [-16, 16]
      const double want = Reference(act, x);
      EXPECT_NEAR(ApplyActivation(act, x, kAlpha, kBeta), want,
                  2e-6 * std::max(1.0, std::fabs(want)))
          << "activation " << static_cast<int>(act) << " at " << x;
    }
  }
}

TEST(CudaMathTest, ReciprocalMatchesDoublePrecision) {
  for (int k = 1; k <= 1024; ++k) {
    for (float x : {k / 64.0f, -k / 64.0f}) {
      EXPECT_NEAR(ApplyActivation(Activation::kReciprocal, x), 1.0 / x,
                  2e-6 * std::max(1.0, std::fabs(1.0 / x)));
    }
  }
}

TEST(CudaMathTest, BinaryOps) {
  EXPECT_EQ(ApplyBinary(BinaryOp::kAdd, 1.5f, 2.0f), 3.5f);
  EXPECT_EQ(ApplyBinary(BinaryOp::kSub, 1.5f, 2.0f), -0.5f);
  EXPECT_EQ(ApplyBinary(BinaryOp::kMul, 1.5f, 2.0f), 3.0f);
  EXPECT_EQ(ApplyBinary(BinaryOp::kDiv, 1.5f, 2.0f), 0.75f);
}

// Offsets computed from coordinates one dimension at a time, for checking.
void NaiveOffsets(const std::vector<int64_t>& out,
                  const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                  int64_t index, int64_t* ao, int64_t* bo) {
  std::vector<int64_t> coord(out.size());
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    coord[d] = index % out[d];
    index /= out[d];
  }
  auto offset = [&](const std::vector<int64_t>& dims) {
    int64_t off = 0;
    const size_t lead = out.size() - dims.size();
    for (size_t d = 0; d < dims.size(); ++d) {
      off = off * dims[d] + (dims[d] == 1 ? 0 : coord[lead + d]);
    }
    return off;
  };
  *ao = offset(a);
  *bo = offset(b);
}

TEST(CudaMathTest, BroadcastOffsetsMatchCoordinates) {
  struct Case {
    std::vector<int64_t> a, b, out;
  };
  const Case cases[] = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{2, 3, 4}, {4}, {2, 3, 4}},
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},
      {{1}, {5, 2}, {5, 2}},
      {{4, 1, 3}, {1, 5, 1}, {4, 5, 3}},
      {{2, 1, 1, 3}, {6, 1}, {2, 1, 6, 3}},
      {{0, 3}, {3}, {0, 3}},
  };
  for (const Case& c : cases) {
    BroadcastIndexer ix;
    const int64_t n = MakeBroadcastIndexer(c.a.data(), c.a.size(), c.b.data(),
                                           c.b.size(), &ix);
    int64_t want_n = 1;
    for (int64_t d : c.out) want_n *= d;
    ASSERT_EQ(n, want_n);
    ASSERT_EQ(ix.rank, static_cast<int>(c.out.size()));
    for (int64_t i = 0; i < n; ++i) {
      int64_t a = 0, b = 0, want_a = 0, want_b = 0;
      BroadcastOffsets(ix, i, &a, &b);
      NaiveOffsets(c.out, c.a, c.b, i, &want_a, &want_b);
      ASSERT_EQ(a, want_a) << "element " << i;
      ASSERT_EQ(b, want_b) << "element " << i;
    }
  }
}

// BroadcastIsIdentity exactly when every output element reads element i of
// both inputs.
TEST(CudaMathTest, BroadcastIsIdentityWhenNoInputIsBroadcast) {
  struct Case {
    std::vector<int64_t> a, b;
    bool identity;
  };
  const Case cases[] = {
      {{2, 3, 4}, {2, 3, 4}, true},
      {{3, 4}, {1, 3, 4}, true},
      {{2, 1, 4}, {2, 1, 4}, true},
      {{1}, {1}, true},
      {{}, {}, true},
      {{2, 3, 4}, {4}, false},
      {{2, 3, 4}, {3, 1}, false},
      {{1}, {5, 2}, false},
      {{4, 1, 3}, {1, 5, 1}, false},
      {{5, 2}, {1, 2}, false},
      {{1, 1, 3}, {1, 3}, true},
      {{1, 3}, {3, 1}, false},
  };
  for (const Case& c : cases) {
    BroadcastIndexer ix;
    const int64_t n = MakeBroadcastIndexer(c.a.data(), c.a.size(), c.b.data(),
                                           c.b.size(), &ix);
    ASSERT_GE(n, 0);
    bool every_element_is_i = true;
    for (int64_t i = 0; i < n; ++i) {
      int64_t a = 0, b = 0;
      BroadcastOffsets(ix, i, &a, &b);
      every_element_is_i = every_element_is_i && a == i && b == i;
    }
    EXPECT_EQ(every_element_is_i, c.identity) << "case " << &c - cases;
    EXPECT_EQ(BroadcastIsIdentity(ix), c.identity) << "case " << &c - cases;
  }
}

TEST(CudaMathTest, BroadcastRefusesWhatDoesNotBroadcast) {
  BroadcastIndexer ix;
  const int64_t a[] = {2, 3}, b[] = {4, 3};
  EXPECT_EQ(MakeBroadcastIndexer(a, 2, b, 2, &ix), -1);
  const int64_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(MakeBroadcastIndexer(deep, 9, a, 2, &ix), -1);
}

TEST(CudaMathTest, SoftmaxPartsCombineInAnyOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-30.0f, 30.0f);
  std::vector<float> row(1000);
  for (float& x : row) x = value(rng);
  double max = -INFINITY, sum = 0;
  for (float x : row) max = std::max(max, double{x});
  for (float x : row) sum += std::exp(x - max);

  for (int parts : {1, 3, 7, 256, 1000}) {
    // Thread t takes elements t, t + parts, ... (as the kernel strides), then
    // the parts are combined pairwise as the block's tree reduction does.
    std::vector<MaxSum> partial(parts, EmptyMaxSum());
    for (size_t j = 0; j < row.size(); ++j) {
      partial[j % parts] = AddElement(partial[j % parts], row[j]);
    }
    while (partial.size() > 1) {
      std::vector<MaxSum> next;
      for (size_t i = 0; i + 1 < partial.size(); i += 2) {
        next.push_back(Combine(partial[i], partial[i + 1]));
      }
      if (partial.size() % 2 == 1)
        next.push_back(Combine(partial.back(), EmptyMaxSum()));
      partial = next;
    }
    const MaxSum total = partial[0];
    EXPECT_EQ(total.max, static_cast<float>(max)) << parts << " parts";
    EXPECT_NEAR(total.sum, sum, 1e-5 * sum) << parts << " parts";
    double softmax_sum = 0;
    for (float x : row) softmax_sum += SoftmaxValue(x, total);
    EXPECT_NEAR(softmax_sum, 1.0, 1e-5) << parts << " parts";
  }
}

// Every output element of a rank-4 transpose, against coordinates mapped
// one axis at a time.
TEST(CudaMathTest, TransposeOffsetsMatchCoordinates) {
  const std::vector<int64_t> in = {2, 3, 4, 5};
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 1, 2, 3},
                                           {3, 2, 1, 0},
                                           {0, 2, 1, 3},
                                           {1, 3, 0, 2},
                                           {2, 0, 3, 1}}) {
    TransposeIndexer ix;
    ASSERT_EQ(MakeTransposeIndexer(in.data(), perm.data(), 4, &ix), 120);
    std::vector<int64_t> out(4);
    for (int d = 0; d < 4; ++d) out[d] = in[perm[d]];
    for (int64_t index = 0; index < 120; ++index) {
      std::vector<int64_t> coord(4);  // output coordinates
      int64_t rest = index;
      for (int d = 3; d >= 0; --d) {
        coord[d] = rest % out[d];
        rest /= out[d];
      }
      std::vector<int64_t> in_coord(4);
      for (int d = 0; d < 4; ++d) in_coord[perm[d]] = coord[d];
      const int64_t want =
          ((in_coord[0] * in[1] + in_coord[1]) * in[2] + in_coord[2]) * in[3] +
          in_coord[3];
      EXPECT_EQ(TransposeSourceOffset(ix, index), want) << index;
    }
  }
}

TEST(CudaMathTest, TransposeRejectsBadPermutations) {
  const int64_t in[] = {2, 3};
  TransposeIndexer ix;
  const int64_t repeated[] = {0, 0}, out_of_range[] = {0, 2};
  EXPECT_EQ(MakeTransposeIndexer(in, repeated, 2, &ix), -1);
  EXPECT_EQ(MakeTransposeIndexer(in, out_of_range, 2, &ix), -1);
}

// A row's statistics combined in the kernel's order (threads striding, then
// a pairwise tree), against a two-pass double computation, on a row whose
// mean is 1000 times its spread (where float E[x^2] - E[x]^2 loses about
// 6% of the variance).
TEST(CudaMathTest, LayerNormStatisticsMatchTwoPassDouble) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> row(3001);
  for (float& x : row) x = 1000.0f + noise(rng);
  double mean = 0, m2 = 0;
  for (float x : row) mean += x;
  mean /= row.size();
  for (float x : row) m2 += (x - mean) * (x - mean);
  for (int parts : {1, 5, 256}) {
    std::vector<MeanM2> partial(parts, EmptyMeanM2());
    for (size_t j = 0; j < row.size(); ++j) {
      partial[j % parts] = AddValue(partial[j % parts], row[j]);
    }
    while (partial.size() > 1) {
      std::vector<MeanM2> next;
      for (size_t i = 0; i + 1 < partial.size(); i += 2) {
        next.push_back(Combine(partial[i], partial[i + 1]));
      }
      if (partial.size() % 2 == 1)
        next.push_back(Combine(partial.back(), EmptyMeanM2()));
      partial = next;
    }
    EXPECT_EQ(partial[0].count, row.size()) << parts << " parts";
    EXPECT_NEAR(partial[0].mean, mean, 1e-5 * mean) << parts << " parts";
    EXPECT_NEAR(partial[0].m2, m2, 1e-4 * m2) << parts << " parts";
    const float eps = 1e-5f;
    EXPECT_NEAR(InvStdDev(partial[0], eps),
                1 / std::sqrt(m2 / row.size() + eps),
                1e-4 / std::sqrt(m2 / row.size() + eps));
  }
  EXPECT_FLOAT_EQ(LayerNormValue(3.0f, 1.0f, 0.5f, 2.0f, 0.25f), 2.25f);
}

TEST(CudaMathTest, GatherOffsetsMatchCoordinates) {
  // data [2, 5, 3] gathered on axis 1 by 4 indices: output [2, 4, 3].
  const int64_t axis_dim = 5, inner = 3, num = 4;
  const int64_t indices[num] = {4, 0, -1, 2};
  for (int64_t i = 0; i < 2 * num * inner; ++i) {
    const int64_t o = i / (num * inner), k = (i / inner) % num, j = i % inner;
    const int64_t index = indices[GatherIndexPosition(i, num, inner)];
    ASSERT_EQ(index, indices[k]);
    const int64_t want =
        (o * axis_dim + (index + axis_dim) % axis_dim) * inner + j;
    EXPECT_EQ(GatherSourceOffset(i, index, axis_dim, num, inner), want) << i;
  }
  EXPECT_EQ(GatherSourceOffset(0, 5, axis_dim, num, inner), -1);
  EXPECT_EQ(GatherSourceOffset(0, -6, axis_dim, num, inner), -1);
}

TEST(CudaMathTest, IntegerArithmeticIsDefinedForEveryInput) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kAdd, kMax, 1), kMin);  // wraps
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMul, kMax, 2), -2);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kDiv, 7, 0), 0);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kDiv, kMin, -1), kMin);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kDiv, -7, 2), -3);  // truncates
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMod, -7, 3), 2);   // floored
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMod, 7, -3), -2);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kFmod, -7, 3), -1);  // truncated
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMod, 5, 0), 0);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMod, kMin, -1), 0);
  EXPECT_EQ(Arithmetic<int32_t>(TypedOp::kNeg,
                                std::numeric_limits<int32_t>::min(), 0),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Arithmetic<int32_t>(TypedOp::kAbs, -4, 0), 4);
  EXPECT_EQ(Arithmetic<int32_t>(TypedOp::kMax, -4, 3), 3);
  EXPECT_EQ(Arithmetic<int64_t>(TypedOp::kMin, -4, 3), -4);
}

TEST(CudaMathTest, FloatMaxMinPropagateNaNAndModFollowsTheDivisor) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Arithmetic<float>(TypedOp::kMax, nan, 1.0f)));
  EXPECT_TRUE(std::isnan(Arithmetic<float>(TypedOp::kMin, 1.0f, nan)));
  EXPECT_EQ(Arithmetic<float>(TypedOp::kMax, -1.0f, 2.0f), 2.0f);
  EXPECT_EQ(Arithmetic<float>(TypedOp::kMod, -7.0f, 3.0f), 2.0f);
  EXPECT_EQ(Arithmetic<float>(TypedOp::kFmod, -7.0f, 3.0f), -1.0f);
  EXPECT_TRUE(std::isnan(Arithmetic<float>(TypedOp::kFmod, 1.0f, 0.0f)));
}

TEST(CudaMathTest, PredicatesCompareAndTestFloats) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(Predicate<int64_t>(TypedOp::kLessOrEqual, 3, 3));
  EXPECT_FALSE(Predicate<int64_t>(TypedOp::kGreater, 3, 3));
  EXPECT_TRUE(Predicate<float>(TypedOp::kGreaterOrEqual, 2.0f, -1.0f));
  EXPECT_FALSE(Predicate<float>(TypedOp::kEqual, nan, nan));
  EXPECT_TRUE(Predicate<uint8_t>(TypedOp::kAnd, 1, 2));  // any nonzero byte
  EXPECT_TRUE(Predicate<uint8_t>(TypedOp::kXor, 1, 0));
  EXPECT_FALSE(Predicate<uint8_t>(TypedOp::kOr, 0, 0));
  EXPECT_TRUE(Predicate<uint8_t>(TypedOp::kNot, 0, 0));
  EXPECT_TRUE(Predicate<float>(TypedOp::kIsNaN, nan, 0.0f));
  EXPECT_FALSE(Predicate<float>(TypedOp::kIsNaN, inf, 0.0f));
  EXPECT_TRUE(Predicate<float>(TypedOp::kIsInf, -inf, 0.0f));
  EXPECT_FALSE(Predicate<float>(TypedOp::kIsInf, nan, 0.0f));
  EXPECT_FALSE(Predicate<float>(TypedOp::kIsInf, 3.0e38f, 0.0f));
  EXPECT_TRUE(Predicate<float>(TypedOp::kIsPosInf, inf, 0.0f));
  EXPECT_FALSE(Predicate<float>(TypedOp::kIsPosInf, -inf, 0.0f));
  EXPECT_TRUE(Predicate<float>(TypedOp::kIsNegInf, -inf, 0.0f));
}

TEST(CudaMathTest, CastFollowsTheCpuEnginesRules) {
  const float f[] = {2.7f,  -2.7f,  std::numeric_limits<float>::quiet_NaN(),
                     1e30f, -1e30f, 300.0f,
                     -1.0f, 0.0f};
  const int64_t i64[] = {(int64_t{1} << 32) + 5, 257, -1};
  const uint8_t b[] = {0, 2};
  using T = ElementType;
  EXPECT_EQ(ReadConverted<int64_t>(f, 0, T::kFloat), 2);
  EXPECT_EQ(ReadConverted<int64_t>(f, 1, T::kFloat), -2);
  EXPECT_EQ(ReadConverted<int64_t>(f, 2, T::kFloat), 0);
  EXPECT_EQ(ReadConverted<int64_t>(f, 3, T::kFloat),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ReadConverted<int32_t>(f, 4, T::kFloat),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ReadConverted<int32_t>(i64, 0, T::kInt64), 5);  // wraps
  EXPECT_EQ(ReadConverted<float>(i64, 2, T::kInt64), -1.0f);
  EXPECT_EQ(ReadConverted<int64_t>(b, 1, T::kBool), 1);
  EXPECT_EQ(ReadConverted<float>(b, 1, T::kUint8), 2.0f);
  EXPECT_EQ(ReadAsByte(f, 5, T::kFloat, false), 255);  // saturates
  EXPECT_EQ(ReadAsByte(f, 6, T::kFloat, false), 0);
  EXPECT_EQ(ReadAsByte(f, 2, T::kFloat, true), 1);  // NaN is true
  EXPECT_EQ(ReadAsByte(f, 7, T::kFloat, true), 0);
  EXPECT_EQ(ReadAsByte(i64, 1, T::kInt64, false), 1);  // 257 wraps
  EXPECT_EQ(ReadAsByte(i64, 1, T::kInt64, true), 1);
  EXPECT_EQ(ReadAsByte(b, 1, T::kBool, false), 1);  // a bool byte of 2 is 1
}

TEST(CudaMathTest, BoolOperandsCompareByTruth) {
  // Equal on bool reads any nonzero byte as true, as the CPU does.
  const int64_t dims[] = {2};
  const int64_t* both[] = {dims, dims};
  const int ranks[] = {1, 1};
  TypedIndexer ix;
  ASSERT_EQ(MakeTypedIndexer(2, both, ranks, dims, 1, &ix), 2);
  const uint8_t a[] = {2, 0}, b[] = {1, 0};
  uint8_t y[2];
  for (int64_t i = 0; i < 2; ++i)
    TypedElement(TypedOp::kEqual, ElementType::kBool, ix, a, b, y, i);
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[1], 1);
}

TEST(CudaMathTest, TypedIndexerBroadcastsThreeInputs) {
  // cond [2, 1, 3], x [4, 1], z [] to y [2, 4, 3].
  const int64_t cond[] = {2, 1, 3}, x[] = {4, 1}, y[] = {2, 4, 3};
  const int64_t* dims[] = {cond, x, nullptr};
  const int ranks[] = {3, 2, 0};
  TypedIndexer ix;
  ASSERT_EQ(MakeTypedIndexer(3, dims, ranks, y, 3, &ix), 24);
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t n = i / 12, h = (i / 3) % 4, w = i % 3;
    int64_t at[kMaxTypedInputs];
    TypedOffsets(ix, i, at);
    EXPECT_EQ(at[0], n * 3 + w) << i;
    EXPECT_EQ(at[1], h) << i;
    EXPECT_EQ(at[2], 0) << i;
  }
  const int64_t bad[] = {3, 1};
  const int64_t* bad_dims[] = {bad};
  const int bad_rank[] = {2};
  EXPECT_EQ(MakeTypedIndexer(1, bad_dims, bad_rank, y, 3, &ix), -1);
}

// The offsets of every output element against the definition: each input's
// coordinate is the output's, or 0 along a dim the input broadcasts.
void ExpectTypedOffsetsAsBroadcast(int inputs, const int64_t* const* dims,
                                   const int* ranks, const int64_t* y,
                                   int y_rank, int expected_rank) {
  TypedIndexer ix;
  const int64_t count = MakeTypedIndexer(inputs, dims, ranks, y, y_rank, &ix);
  ASSERT_GT(count, 0);
  EXPECT_EQ(ix.rank, expected_rank);
  EXPECT_TRUE(ix.index32);
  for (int64_t i = 0; i < count; ++i) {
    int64_t at[kMaxTypedInputs];
    TypedOffsets(ix, i, at);
    for (int k = 0; k < inputs; ++k) {
      int64_t rest = i, offset = 0, stride = 1;
      for (int d = y_rank - 1; d >= 0; --d) {
        const int64_t coord = rest % y[d];
        rest /= y[d];
        const int kd = d - (y_rank - ranks[k]);
        const int64_t extent = kd >= 0 ? dims[k][kd] : 1;
        if (extent != 1) offset += coord * stride;
        stride *= extent;
      }
      ASSERT_EQ(at[k], offset) << "input " << k << " element " << i;
    }
  }
}

TEST(CudaMathTest, TypedIndexerCompactsAndKeepsEveryOffset) {
  {  // Hugging Face's mask: cond [2, 1, 1, 5], x [], z [2, 1, 3, 5].
    const int64_t cond[] = {2, 1, 1, 5}, z[] = {2, 1, 3, 5}, y[] = {2, 1, 3, 5};
    const int64_t* dims[] = {cond, nullptr, z};
    const int ranks[] = {4, 0, 4};
    ExpectTypedOffsetsAsBroadcast(3, dims, ranks, y, 4, 3);  // the 1 dropped
  }
  {  // Same shapes throughout: one dim.
    const int64_t a[] = {2, 3, 4};
    const int64_t* dims[] = {a, a};
    const int ranks[] = {3, 3};
    ExpectTypedOffsetsAsBroadcast(2, dims, ranks, a, 3, 1);
  }
  {  // a [4, 1, 1] against b [4, 3, 5]: a broadcasts over the last two,
     // which merge (0 at both for a, contiguous for b).
    const int64_t a[] = {4, 1, 1}, b[] = {4, 3, 5};
    const int64_t* dims[] = {a, b};
    const int ranks[] = {3, 3};
    ExpectTypedOffsetsAsBroadcast(2, dims, ranks, b, 3, 2);
  }
  {  // a [3, 1] against b [1, 5]: no merge.
    const int64_t a[] = {3, 1}, b[] = {1, 5}, y[] = {3, 5};
    const int64_t* dims[] = {a, b};
    const int ranks[] = {2, 2};
    ExpectTypedOffsetsAsBroadcast(2, dims, ranks, y, 2, 2);
  }
  {  // Every dim 1: no dims left, offset 0.
    const int64_t a[] = {1, 1}, y[] = {1, 1};
    const int64_t* dims[] = {a};
    const int ranks[] = {2};
    ExpectTypedOffsetsAsBroadcast(1, dims, ranks, y, 2, 0);
  }
  {  // a [2, 3, 1] against b [2, 3, 5]: a alone could merge its first two
     // dims, b's broadcast of the last keeps them from merging with it.
    const int64_t a[] = {2, 3, 1}, b[] = {2, 3, 5};
    const int64_t* dims[] = {a, b};
    const int ranks[] = {3, 3};
    ExpectTypedOffsetsAsBroadcast(2, dims, ranks, b, 3, 2);
  }
  {  // An interior broadcast: a [2, 1, 5] against b [2, 3, 5].
    const int64_t a[] = {2, 1, 5}, b[] = {2, 3, 5};
    const int64_t* dims[] = {a, b};
    const int ranks[] = {3, 3};
    ExpectTypedOffsetsAsBroadcast(2, dims, ranks, b, 3, 3);
  }
}

// 32-bit division up to 2^32 - 1 elements exactly: at 2^32 - 1 the
// indexer divides in 32 bits, at 2^32 in 64 (both sizes without walking
// every element: the first, a middle and the last offsets).
TEST(CudaMathTest, TypedIndexerTakes32BitsUpToTheLastIndex) {
  const int64_t below[] = {65535, 65537};  // 2^32 - 1
  const int64_t at[] = {65536, 65536};     // 2^32
  for (const int64_t* y : {below, at}) {
    const int64_t row[] = {1, y[1]};  // one row, broadcast over the rows
    const int64_t* dims[] = {row, y};
    const int ranks[] = {2, 2};
    TypedIndexer ix;
    const int64_t count = MakeTypedIndexer(2, dims, ranks, y, 2, &ix);
    ASSERT_EQ(count, y[0] * y[1]);
    EXPECT_EQ(ix.index32, count <= int64_t{4294967295}) << count;
    for (int64_t i : {int64_t{0}, count / 2 + 3, count - 1}) {
      int64_t offsets[kMaxTypedInputs];
      TypedOffsets(ix, i, offsets);
      EXPECT_EQ(offsets[0], i % y[1]) << i;
      EXPECT_EQ(offsets[1], i) << i;
    }
  }
}

TEST(CudaMathTest, TypedIndexerPastFourBillionDividesIn64Bits) {
  // a [70000, 1] against b [70000, 70000]: 4.9e9 elements.
  const int64_t a[] = {70000, 1}, b[] = {70000, 70000};
  const int64_t* dims[] = {a, b};
  const int ranks[] = {2, 2};
  TypedIndexer ix;
  ASSERT_EQ(MakeTypedIndexer(2, dims, ranks, b, 2, &ix), 4900000000);
  EXPECT_FALSE(ix.index32);
  for (int64_t i : {int64_t{0}, int64_t{4294967296}, int64_t{4899999999}}) {
    int64_t at[kMaxTypedInputs];
    TypedOffsets(ix, i, at);
    EXPECT_EQ(at[0], i / 70000) << i;
    EXPECT_EQ(at[1], i) << i;
  }
}

TEST(CudaMathTest, TypedElementWritesBoolForPredicatesAndWhereSelects) {
  const int64_t a_dims[] = {2, 1}, b_dims[] = {3}, y_dims[] = {2, 3};
  const int64_t* dims[] = {a_dims, b_dims};
  const int ranks[] = {2, 1};
  TypedIndexer ix;
  ASSERT_EQ(MakeTypedIndexer(2, dims, ranks, y_dims, 2, &ix), 6);
  const int32_t a[] = {1, 5}, b[] = {0, 1, 9};
  uint8_t ge[6];
  int32_t sum[6];
  for (int64_t i = 0; i < 6; ++i) {
    TypedElement(TypedOp::kGreaterOrEqual, ElementType::kInt32, ix, a, b, ge,
                 i);
    TypedElement(TypedOp::kAdd, ElementType::kInt32, ix, a, b, sum, i);
  }
  const uint8_t want_ge[] = {1, 1, 0, 1, 1, 0};
  const int32_t want_sum[] = {1, 2, 10, 5, 6, 14};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ge[i], want_ge[i]) << i;
    EXPECT_EQ(sum[i], want_sum[i]) << i;
  }
  const int64_t c_dims[] = {2, 3}, x_dims[] = {1}, z_dims[] = {3};
  const int64_t* where_dims[] = {c_dims, x_dims, z_dims};
  const int where_ranks[] = {2, 1, 1};
  ASSERT_EQ(MakeTypedIndexer(3, where_dims, where_ranks, y_dims, 2, &ix), 6);
  const uint8_t cond[] = {1, 0, 1, 0, 0, 1};
  const float x[] = {-1.0f}, z[] = {10.0f, 20.0f, 30.0f};
  float out[6];
  for (int64_t i = 0; i < 6; ++i) WhereElement(ix, cond, x, z, out, i);
  const float want[] = {-1.0f, 20.0f, -1.0f, 10.0f, 20.0f, -1.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

TEST(CudaMathTest, GatherNdSelectsSlicesPerBatch) {
  // data [2 batches, 3, 4, slice 2], k = 2, two tuples per batch.
  GatherNdIndexer ix;
  ix.rows_per_batch = 2;
  ix.slice = 2;
  ix.k = 2;
  ix.dims[0] = 3;
  ix.dims[1] = 4;
  ix.strides[0] = 8;
  ix.strides[1] = 2;
  ix.batch_stride = 24;
  const int64_t indices[] = {1, 3, 0, -1, 2, 0, 3, 0};  // last: out of range
  EXPECT_EQ(GatherNdSource(ix, indices, 0), 1 * 8 + 3 * 2);
  EXPECT_EQ(GatherNdSource(ix, indices, 1), 1 * 8 + 3 * 2 + 1);
  EXPECT_EQ(GatherNdSource(ix, indices, 2), 0 * 8 + 3 * 2);  // -1 is 3
  EXPECT_EQ(GatherNdSource(ix, indices, 4), 24 + 2 * 8);     // batch 1
  EXPECT_EQ(GatherNdSource(ix, indices, 6), -1);
}

TEST(CudaMathTest, GatherElementsReplacesTheAxisCoordinate) {
  // data [3, 4], indices and output [2, 4], axis 0.
  GatherElementsIndexer ix;
  ix.rank = 2;
  ix.axis = 0;
  ix.axis_dim = 3;
  ix.out_dims[0] = 2;
  ix.out_dims[1] = 4;
  ix.data_strides[0] = 4;
  ix.data_strides[1] = 1;
  EXPECT_EQ(GatherElementsSource(ix, 2, 1), 2 * 4 + 1);
  EXPECT_EQ(GatherElementsSource(ix, -1, 6), 2 * 4 + 2);  // row 1, col 2
  EXPECT_EQ(GatherElementsSource(ix, 3, 0), -1);
}

TEST(CudaMathTest, CumSumAndArgMaxWalkOneLine) {
  // [outer 1, n 4, inner 2]: line 1 is the second column.
  const int32_t x[] = {1, 10, 2, 20, 3, 30, 4, 40};
  int32_t y[8] = {};
  CumSumLine(x, y, 1, 4, 2, false, false);
  EXPECT_EQ(y[1], 10);
  EXPECT_EQ(y[7], 100);
  CumSumLine(x, y, 0, 4, 2, true, true);  // exclusive, from the end
  EXPECT_EQ(y[6], 0);
  EXPECT_EQ(y[0], 9);
  const int64_t big[] = {std::numeric_limits<int64_t>::max(), 1};
  int64_t wrapped[2];
  CumSumLine(big, wrapped, 0, 2, 1, false, false);
  EXPECT_EQ(wrapped[1], std::numeric_limits<int64_t>::min());
  const float f[] = {1.0f, 5.0f, 5.0f, -2.0f};
  EXPECT_EQ(ArgMaxLine(f, 0, 4, 1, false), 1);
  EXPECT_EQ(ArgMaxLine(f, 0, 4, 1, true), 2);
}

TEST(CudaMathTest, SoftmaxOfMaskedScoresIgnoresMinusInfinity) {
  // A causal mask's row: -inf before and after the one visible score, in
  // parts that hold only -inf (as a block's threads see them).
  const float inf = std::numeric_limits<float>::infinity();
  MaxSum left = EmptyMaxSum(), right = EmptyMaxSum();
  for (float x : {-inf, -inf}) left = AddElement(left, x);
  for (float x : {-0.5f, -inf}) right = AddElement(right, x);
  const MaxSum row = Combine(left, right);
  EXPECT_EQ(SoftmaxValue(-0.5f, row), 1.0f);
  EXPECT_EQ(SoftmaxValue(-inf, row), 0.0f);
}

TEST(CudaMathTest, QuantizeRoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(QuantizeValue<uint8_t>(2.5f, 1.0f, 0.0f), 2);  // ties to even
  EXPECT_EQ(QuantizeValue<uint8_t>(3.5f, 1.0f, 0.0f), 4);
  EXPECT_EQ(QuantizeValue<int8_t>(-0.75f, 0.5f, 3.0f), 1);  // -1.5 -> -2, +3
  EXPECT_EQ(QuantizeValue<uint8_t>(1000.0f, 1.0f, 128.0f), 255);
  EXPECT_EQ(QuantizeValue<int16_t>(-1e9f, 1.0f, 0.0f), -32768);
  EXPECT_EQ(QuantizeValue<uint8_t>(std::nanf(""), 1.0f, 10.0f), 0);
  EXPECT_EQ(DequantizeValue<uint8_t>(200, 0.5f, 128), 36.0f);
  EXPECT_EQ(
      DequantizeValue<int32_t>(std::numeric_limits<int32_t>::min(), 1.0f, 1),
      -2147483648.0f);  // the difference in integers, not float
  EXPECT_EQ(QuantChannel(13, 3, 4), 0);  // [outer, 3, 4]: 13 = 1*12 + 0*4 + 1
  EXPECT_EQ(QuantChannel(9, 3, 4), 2);
}

TEST(CudaMathTest, ResizeMapsCoordinatesAsTheCpu) {
  using K = ResizeCoordinateKind;
  // 4 -> 8, scale 2: half_pixel maps output 0 to -0.25, output 7 to 3.25.
  EXPECT_DOUBLE_EQ(ResizeSource(K::kHalfPixel, 0, 4, 8, 2.0), -0.25);
  EXPECT_DOUBLE_EQ(ResizeSource(K::kHalfPixel, 7, 4, 8, 2.0), 3.25);
  EXPECT_DOUBLE_EQ(ResizeSource(K::kAlignCorners, 7, 4, 8, 2.0), 3.0);
  EXPECT_DOUBLE_EQ(ResizeSource(K::kPytorchHalfPixel, 0, 4, 1, 0.25), 0.0);
  EXPECT_EQ(NearestSource(1.5, NearestKind::kRoundPreferFloor, 4), 1);
  EXPECT_EQ(NearestSource(1.5, NearestKind::kRoundPreferCeil, 4), 2);
  EXPECT_EQ(NearestSource(3.2, NearestKind::kCeil, 4), 3);  // clamped
  int64_t index[2];
  float weight[2];
  LinearTaps(-0.25, 4, index, weight);  // both taps at the edge
  EXPECT_EQ(index[0], 0);
  EXPECT_EQ(index[1], 0);
  LinearTaps(2.0, 4, index, weight);  // integral: all weight on itself
  EXPECT_EQ(index[1], 2);
  EXPECT_EQ(weight[1], 1.0f);
  LinearTaps(1.25, 4, index, weight);
  EXPECT_EQ(index[0], 1);
  EXPECT_FLOAT_EQ(weight[0], 0.75f);
  // Bilinear 2x2 -> 3x3 with align_corners: the centre is the mean.
  ResizeIndexer ix;
  ix.rank = 2;
  ix.linear = true;
  ix.coordinate = K::kAlignCorners;
  for (int d = 0; d < 2; ++d) {
    ix.in[d] = 2;
    ix.out[d] = 3;
    ix.scale[d] = 1.5;
  }
  const float x[] = {1.0f, 2.0f, 3.0f, 4.0f};
  EXPECT_FLOAT_EQ(ResizeElement(ix, x, 4), 2.5f);
  EXPECT_FLOAT_EQ(ResizeElement(ix, x, 0), 1.0f);
  EXPECT_FLOAT_EQ(ResizeElement(ix, x, 8), 4.0f);
}

// Pow by the exponents exporters write (x^2 in LayerNorm's variance, x^3
// in tanh GELU, x^0.5) and Sqrt, on their domains.
TEST(CudaMathTest, PowAndSqrt) {
  for (float exponent : {2.0f, 3.0f, 0.5f, -1.0f}) {
    for (int k = -64; k <= 64; ++k) {
      const float x = exponent == 0.5f ? std::fabs(k / 8.0f) : k / 8.0f;
      if (x == 0.0f && exponent < 0) continue;
      const double want = std::pow(double{x}, double{exponent});
      EXPECT_NEAR(ApplyActivation(Activation::kPow, x, exponent), want,
                  2e-6 * std::max(1.0, std::fabs(want)))
          << x << "^" << exponent;
    }
  }
  for (int k = 0; k <= 256; ++k) {
    const float x = k / 4.0f;
    EXPECT_NEAR(ApplyActivation(Activation::kSqrt, x), std::sqrt(double{x}),
                1e-6 * std::max(1.0, std::sqrt(double{x})));
  }
}

// Pooling against a direct computation on an explicitly padded plane
// (NaN marks padding): max, and average with and without the padding
// counted, asymmetric pads, a window past the end padding (ceil mode).
TEST(CudaMathTest, PoolValueMatchesAnExplicitlyPaddedPlane) {
  const int64_t in_h = 5, in_w = 6;
  std::vector<float> plane(in_h * in_w);
  for (size_t i = 0; i < plane.size(); ++i) plane[i] = std::sin(1.7 * i) * 3;
  for (bool max : {true, false}) {
    for (bool include_pad : {false, true}) {
      Pool2DGeometry g;
      g.in_h = in_h;
      g.in_w = in_w;
      g.kernel_h = 3;
      g.kernel_w = 2;
      g.stride_h = 2;
      g.stride_w = 2;
      g.pad_top = 1, g.pad_left = 0, g.pad_bottom = 0, g.pad_right = 1;
      g.out_h = 3;  // ceil((5 + 1 - 3) / 2) + 1: the last window passes the end
      g.out_w = 3;  // (6 + 1 - 2) / 2 + 1
      g.max = max;
      g.count_include_pad = include_pad;
      const int64_t ph = in_h + g.pad_top + g.pad_bottom;
      const int64_t pw = in_w + g.pad_left + g.pad_right;
      auto padded = [&](int64_t h, int64_t w) {  // NaN: padding
        const int64_t r = h - g.pad_top, c = w - g.pad_left;
        return r < 0 || c < 0 || r >= in_h || c >= in_w ? NAN
                                                        : plane[r * in_w + c];
      };
      for (int64_t p = 0; p < g.out_h; ++p) {
        for (int64_t q = 0; q < g.out_w; ++q) {
          double acc = max ? -INFINITY : 0;
          int count = 0;
          for (int64_t i = 0; i < g.kernel_h; ++i) {
            for (int64_t j = 0; j < g.kernel_w; ++j) {
              const int64_t h = p * g.stride_h + i, w = q * g.stride_w + j;
              if (h >= ph || w >= pw) continue;  // past the end padding
              const float v = padded(h, w);
              if (std::isnan(v)) {
                count += include_pad;
                continue;
              }
              acc = max ? std::max<double>(acc, v) : acc + v;
              ++count;
            }
          }
          const double want = max ? acc : acc / count;
          EXPECT_NEAR(PoolValue(g, plane.data(), p, q), want, 1e-6)
              << (max ? "max" : "avg") << " include_pad " << include_pad
              << " at " << p << "," << q;
        }
      }
    }
  }
}

TEST(CudaMathTest, LrnMatchesDoublePrecision) {
  const int64_t channels = 6, spatial = 4, size = 3;
  std::vector<float> image(channels * spatial);
  for (size_t i = 0; i < image.size(); ++i) image[i] = std::cos(0.9 * i) * 2;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t s = 0; s < spatial; ++s) {
      double sum = 0;
      for (int64_t k = std::max<int64_t>(0, c - 1);
           k <= std::min<int64_t>(channels - 1, c + 1); ++k)
        sum += double{image[k * spatial + s]} * image[k * spatial + s];
      const double want =
          image[c * spatial + s] * std::pow(1.5 + 0.02 / size * sum, -0.75);
      EXPECT_NEAR(LrnValue(image.data(), channels, spatial, c, s, size, 0.02f,
                           0.75f, 1.5f),
                  want, 1e-6 * std::max(1.0, std::fabs(want)));
    }
  }
  EXPECT_EQ(ChannelOf(2 * 6 * 4 + 3 * 4 + 1, 6, 4), 3);
}

// NCHW and NHWC per-channel indexing against coordinates.
TEST(CudaMathTest, ChannelOfFollowsTheLayout) {
  const int64_t batch = 2, channels = 3, spatial = 5;
  for (bool last : {false, true}) {
    const ChannelLayout l = {batch, channels, spatial, last};
    ASSERT_EQ(ElementCount(l), batch * channels * spatial);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t s = 0; s < spatial; ++s) {
          const int64_t i = last ? (b * spatial + s) * channels + c
                                 : (b * channels + c) * spatial + s;
          EXPECT_EQ(ChannelOf(l, i), c) << "NHWC " << last << " at " << i;
        }
      }
    }
  }
}

// The saturating conversion's clamp: float32's lowest (Hugging Face's
// mask) becomes the lowest finite float16 and bfloat16, not -inf; values
// in range and NaN are unchanged.
TEST(CudaMathTest, ClampToFiniteKeepsMasksFinite) {
  const float lowest = -3.4028235e38f;
  EXPECT_EQ(FloatToHalfBits(lowest), 0xfc00);  // -inf without the clamp
  EXPECT_EQ(FloatToHalfBits(ClampToFinite(lowest, kMaxFiniteHalf)), 0xfbff);
  EXPECT_EQ(FloatToHalfBits(ClampToFinite(70000.0f, kMaxFiniteHalf)), 0x7bff);
  EXPECT_EQ(FloatToBFloat16Bits(lowest), 0xff80);
  EXPECT_EQ(FloatToBFloat16Bits(ClampToFinite(lowest, kMaxFiniteBFloat16)),
            0xff7f);
  EXPECT_EQ(BFloat16BitsToFloat(0x7f7f), kMaxFiniteBFloat16);
  EXPECT_EQ(HalfBitsToFloat(0x7bff), kMaxFiniteHalf);
  EXPECT_EQ(ClampToFinite(-1.5f, kMaxFiniteHalf), -1.5f);
  EXPECT_EQ(ClampToFinite(-65504.0f, kMaxFiniteHalf), -65504.0f);
  EXPECT_TRUE(std::isnan(ClampToFinite(NAN, kMaxFiniteHalf)));
}

// The stored-element conversions are half_math.h's: exact loads, stores
// rounded to nearest even.
TEST(CudaMathTest, FloatStorageLoadsExactlyAndStoresToNearestEven) {
  EXPECT_EQ(ToFloat(1.25f), 1.25f);
  EXPECT_EQ(FromFloat<float>(0.1f), 0.1f);
  for (uint32_t bits = 0; bits <= 0xffff; bits += 7) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float f = ToFloat(h);
    ASSERT_EQ(std::bit_cast<uint32_t>(f),
              std::bit_cast<uint32_t>(HalfBitsToFloat(h)));
  }
  EXPECT_EQ(FromFloat<uint16_t>(1.0f), 0x3c00);
  EXPECT_EQ(FromFloat<uint16_t>(1.0f + 0x1p-11f), 0x3c00);  // tie: to even
  EXPECT_EQ(FromFloat<uint16_t>(1.0f + 0x3p-11f), 0x3c02);  // tie: to even
  EXPECT_EQ(FromFloat<uint16_t>(1.0f + 0x1.2p-11f), 0x3c01);
  EXPECT_EQ(FromFloat<uint16_t>(-70000.0f), 0xfc00);
  EXPECT_EQ(FromFloat<uint16_t>(0.1f), FloatToHalfBits(0.1f));
  EXPECT_EQ(ToFloat(BFloat16Bits{0x3f81}), 1.0f + 0x1p-7f);
  EXPECT_EQ(FromFloat<BFloat16Bits>(1.0f + 0x1p-8f).bits, 0x3f80);  // tie
  EXPECT_EQ(FromFloat<BFloat16Bits>(1.0f + 0x3p-8f).bits, 0x3f82);  // tie
  EXPECT_EQ(FromFloat<BFloat16Bits>(1.0f + 0x1.2p-8f).bits, 0x3f81);
}

// Every bfloat16 is the top half of a float: decoding is exact, and every
// non-NaN encodes back to its own bits; NaNs stay NaNs of their sign.
TEST(CudaMathTest, EveryBFloat16DecodesExactlyAndEncodesBack) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const float got = BFloat16BitsToFloat(b);
    ASSERT_EQ(std::bit_cast<uint32_t>(got), bits << 16) << "bf16 " << bits;
    if (std::isnan(got)) {
      const uint16_t back = FloatToBFloat16Bits(got);
      ASSERT_TRUE(std::isnan(BFloat16BitsToFloat(back))) << "bf16 " << bits;
      ASSERT_EQ(back & 0x8000, b & 0x8000) << "bf16 " << bits;
      continue;
    }
    ASSERT_EQ(FloatToBFloat16Bits(got), b) << "bf16 " << bits;
  }
}

// Between each pair of neighboring positive bfloat16s (and from the largest
// to the next step, infinity): the midpoint goes to the even one, the
// floats beside it to the nearer one. Negatives mirror. A NaN whose payload
// lies in the dropped half stays a (quiet) NaN.
TEST(CudaMathTest, FloatToBFloat16RoundsToNearestEven) {
  for (uint32_t low = 0; low <= 0x7f7f; ++low) {
    const uint32_t mid = (low << 16) | 0x8000u;
    const uint16_t even = (low & 1) == 0 ? low : low + 1;
    for (const uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t s16 = static_cast<uint16_t>(sign >> 16);
      ASSERT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(sign | mid)),
                s16 | even)
          << "midpoint above " << low;
      ASSERT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(sign | (mid - 1))),
                s16 | low)
          << "below the midpoint above " << low;
      ASSERT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(sign | (mid + 1))),
                s16 | (low + 1))
          << "above the midpoint above " << low;
    }
  }
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBFloat16Bits(-INFINITY), 0xff80);
  const float low_payload_nan = std::bit_cast<float>(0x7f800001u);
  EXPECT_TRUE(
      std::isnan(BFloat16BitsToFloat(FloatToBFloat16Bits(low_payload_nan))));
}

// A fused residual's sum rounds as the Add's result type stores it.
TEST(CudaMathTest, RoundSumRoundsToTheSumsStorage) {
  const float v = 1.0f + 0x1p-9f;  // a float16, not a bfloat16
  EXPECT_EQ(RoundSum(v, FloatStorage::kFloat), v);
  EXPECT_EQ(RoundSum(v, FloatStorage::kHalf), v);
  EXPECT_EQ(RoundSum(v, FloatStorage::kBFloat16), 1.0f);
  EXPECT_EQ(RoundSum(1.0f + 0x1p-12f, FloatStorage::kHalf), 1.0f);
}

// A pooling geometry with asymmetric pads, dilation and a window past the
// end padding, for the layout tests below.
Pool2DGeometry LayoutTestGeometry(bool max) {
  Pool2DGeometry g;
  g.in_h = 5;
  g.in_w = 6;
  g.kernel_h = 3;
  g.kernel_w = 2;
  g.stride_h = 2;
  g.stride_w = 2;
  g.dilation_w = 2;
  g.pad_top = 1, g.pad_left = 1, g.pad_bottom = 0, g.pad_right = 1;
  g.out_h = 3;  // (5 + 1 - 3) / 2 + 1, and one more in ceil mode
  g.out_w = 3;  // (6 + 2 - 3) / 2 + 1
  g.max = max;
  return g;
}

// NHWC pooling reads the same windows as NCHW: every output element of an
// NHWC tensor (PoolSiteOf, PoolValue with the channel stride) equals the
// NCHW computation on the transposed tensor, bit for bit, in float32 and
// from float16 storage.
TEST(CudaMathTest, PoolSiteOfNhwcMatchesNchw) {
  const int64_t images = 2, channels = 3;
  for (bool max : {true, false}) {
    const Pool2DGeometry g = LayoutTestGeometry(max);
    const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    std::vector<float> nchw(images * channels * in_plane);
    std::vector<float> nhwc(nchw.size());
    std::vector<uint16_t> nhwc_half(nchw.size());
    for (int64_t n = 0; n < images; ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t s = 0; s < in_plane; ++s) {
          const int64_t i = (n * channels + c) * in_plane + s;
          // Values a float16 holds exactly, so both storages agree.
          nchw[i] = HalfBitsToFloat(FloatToHalfBits(std::sin(1.3 * i) * 4));
          nhwc[(n * in_plane + s) * channels + c] = nchw[i];
          nhwc_half[(n * in_plane + s) * channels + c] =
              FloatToHalfBits(nchw[i]);
        }
    const PoolLayout nchw_layout = {images * channels, 1, false};
    const PoolLayout nhwc_layout = {images * channels, channels, true};
    for (int64_t n = 0; n < images; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t r = 0; r < out_plane; ++r) {
          const int64_t plane = n * channels + c;
          const PoolSite a = PoolSiteOf(g, nchw_layout, plane * out_plane + r);
          ASSERT_EQ(a.plane_offset, plane * in_plane);
          ASSERT_EQ(a.pixel_stride, 1);
          ASSERT_EQ(a.p * g.out_w + a.q, r);
          const float want = PoolValue(g, nchw.data() + a.plane_offset, a.p,
                                       a.q, a.pixel_stride);
          const int64_t i = (n * out_plane + r) * channels + c;
          const PoolSite b = PoolSiteOf(g, nhwc_layout, i);
          ASSERT_EQ(b.p, a.p);
          ASSERT_EQ(b.q, a.q);
          EXPECT_EQ(PoolValue(g, nhwc.data() + b.plane_offset, b.p, b.q,
                              b.pixel_stride),
                    want)
              << (max ? "max" : "avg") << " at " << i;
          EXPECT_EQ(PoolValue(g, nhwc_half.data() + b.plane_offset, b.p, b.q,
                              b.pixel_stride),
                    want)
              << (max ? "max" : "avg") << " float16 at " << i;
        }
      }
    }
  }
}

// ChannelAffineValue against a direct computation: float16 x and z are
// widened exactly, the map applied in float32 in its order.
TEST(CudaMathTest, ChannelAffineValueReadsEitherStorage) {
  const int64_t batch = 2, channels = 3, spatial = 4;
  const int64_t count = batch * channels * spatial;
  const float scale[] = {0.5f, -2.0f, 1.5f}, shift[] = {1.0f, 0.25f, -3.0f};
  std::vector<uint16_t> x(count), z(count);
  for (int64_t i = 0; i < count; ++i) {
    x[i] = FloatToHalfBits(std::cos(0.7 * i) * 3);
    z[i] = FloatToHalfBits(std::sin(0.3 * i));
  }
  for (bool last : {false, true}) {
    ChannelAffineMap m;
    m.layout = {batch, channels, spatial, last};
    m.scale = scale;
    m.shift = shift;
    m.act = Activation::kLeakyRelu;
    m.alpha = 0.125f;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t c = last ? i % channels : (i / spatial) % channels;
      const float affine = HalfBitsToFloat(x[i]) * scale[c] + shift[c];
      const float with_z = affine + HalfBitsToFloat(z[i]);
      const float want = with_z >= 0 ? with_z : 0.125f * with_z;
      EXPECT_FLOAT_EQ(ChannelAffineValue(m, x.data(), z.data(), i), want);
      const float want_no_z = affine >= 0 ? affine : 0.125f * affine;
      EXPECT_FLOAT_EQ(ChannelAffineValue(m, x.data(),
                                         static_cast<const float*>(nullptr), i),
                      want_no_z);
    }
  }
  // A convolution's epilogue: no scale, the bias as the shift.
  ChannelAffineMap bias_only;
  bias_only.layout = {1, channels, 1, true};
  bias_only.shift = shift;
  const float r[] = {2.0f, -1.0f, 0.5f}, residual[] = {1.0f, 1.0f, 1.0f};
  for (int64_t c = 0; c < channels; ++c) {
    EXPECT_EQ(ChannelAffineValue(bias_only, r, residual, c),
              r[c] + shift[c] + residual[c]);
  }
}

// A half's value from its fields, in double: (-1)^sign * mantissa * 2^exp.
double DecodeHalf(uint16_t h) {
  const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f) {
    return mantissa != 0 ? std::copysign(NAN, sign) : sign * INFINITY;
  }
  if (exponent == 0)
    return sign * std::ldexp(static_cast<double>(mantissa), -24);
  return sign *
         std::ldexp(static_cast<double>(0x400 + mantissa), exponent - 25);
}

bool IsHalfNan(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}

TEST(CudaMathTest, EveryHalfDecodesExactlyAndEncodesBack) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const double want = DecodeHalf(h);
    const float got = HalfBitsToFloat(h);
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << "half " << bits;
    if (IsHalfNan(h)) {
      ASSERT_TRUE(std::isnan(got)) << "half " << bits;
      continue;
    }
    ASSERT_EQ(double{got}, want) << "half " << bits;
    ASSERT_EQ(FloatToHalfBits(static_cast<float>(want)), h) << "half " << bits;
    ASSERT_EQ(FloatToHalfBits(got), h) << "half " << bits;  // -0 included
  }
}

// Between each pair of neighboring halves, from 0 up to 65504 and the next
// step past it (65536, which rounds to infinity): the midpoint goes to the
// even one, the floats beside it to the nearer one. Negatives mirror.
TEST(CudaMathTest, FloatToHalfRoundsToNearestEven) {
  for (uint16_t low = 0; low <= 0x7bff; ++low) {
    const uint16_t high = low + 1;
    const double low_value = DecodeHalf(low);
    const double high_value = high == 0x7c00 ? 65536.0 : DecodeHalf(high);
    const double midpoint = (low_value + high_value) / 2;
    const float mid = static_cast<float>(midpoint);
    ASSERT_EQ(double{mid}, midpoint) << "half " << low;  // exact in float
    const uint16_t even = (low & 1) == 0 ? low : high;
    const float above = std::nextafter(mid, INFINITY);
    const float below = std::nextafter(mid, 0.0f);
    ASSERT_EQ(FloatToHalfBits(mid), even) << "half " << low;
    ASSERT_EQ(FloatToHalfBits(above), high) << "half " << low;
    ASSERT_EQ(FloatToHalfBits(below), low) << "half " << low;
    ASSERT_EQ(FloatToHalfBits(-mid), 0x8000 | even) << "half " << low;
    ASSERT_EQ(FloatToHalfBits(-above), 0x8000 | high) << "half " << low;
    ASSERT_EQ(FloatToHalfBits(-below), 0x8000 | low) << "half " << low;
  }
}

TEST(CudaMathTest, FloatToHalfOverflowInfinityAndNan) {
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);  // the largest finite half
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-65520.0f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(INFINITY), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-INFINITY), 0xfc00);
  // Quiet and signaling NaNs, of both signs and with the payload in the
  // low bits only (which 13 dropped bits must not turn into infinity).
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                       0x7fffffffu, 0x7f801000u}) {
    const uint16_t h = FloatToHalfBits(std::bit_cast<float>(nan));
    EXPECT_TRUE(IsHalfNan(h)) << std::hex << nan << " -> " << h;
    EXPECT_NE(h & 0x0200, 0) << std::hex << nan << " -> " << h;  // quiet
    EXPECT_EQ(h & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
  }
}

TEST(CudaMathTest, FloatToHalfSubnormalsAndUnderflow) {
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);  // halfway 0 / 2^-24: even
  EXPECT_EQ(FloatToHalfBits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToHalfBits(-0x1p-24f), 0x8001);
  EXPECT_EQ(FloatToHalfBits(0x1.ff8p-15f), 0x03ff);  // the largest one
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);      // the smallest normal
  EXPECT_EQ(FloatToHalfBits(-0x1p-30f), 0x8000);     // a signed zero
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  // Float subnormals, and the smallest normal float.
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::denorm_min()), 0);
  EXPECT_EQ(FloatToHalfBits(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(FloatToHalfBits(0x1p-130f), 0);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::min()), 0);
}

// One attention row's operands: k and v rows are head_dim + 3 apart (a
// strided view), the mask is kv_len values (stride 1) or one (stride 0).
struct AttentionRowData {
  std::vector<float> q, k, v, mask;
  int64_t kv_len = 0, head_dim = 0;

  AttentionRowInput Input(float scale, bool zero_masked_rows) const {
    const int64_t stride = head_dim + 3;
    return {q.data(),
            k.data(),
            stride,
            v.data(),
            stride,
            mask.empty() ? nullptr : mask.data(),
            mask.size() == 1 ? 0 : 1,
            kv_len,
            head_dim,
            scale,
            zero_masked_rows};
  }
};

AttentionRowData RandomAttentionRow(int64_t kv_len, int64_t head_dim,
                                    std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  AttentionRowData row;
  row.kv_len = kv_len;
  row.head_dim = head_dim;
  row.q.resize(head_dim);
  row.k.resize(std::max<int64_t>(kv_len, 1) * (head_dim + 3));
  row.v.resize(row.k.size());
  for (float& x : row.q) x = value(rng);
  for (float& x : row.k) x = value(rng);
  for (float& x : row.v) x = value(rng);
  return row;
}

// The row computed directly in double: every score, their max, the sum of
// exp(score - max), then the weighted sum of v over that sum; a row of -inf
// scores only gives 0 or NaN (0 without keys).
std::vector<double> DirectAttentionRow(const AttentionRowInput& in) {
  std::vector<double> scores(in.kv_len);
  double max = -INFINITY;
  for (int64_t j = 0; j < in.kv_len; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < in.head_dim; ++d) {
      dot += double{in.q[d]} * in.k[j * in.k_row_stride + d];
    }
    const double mask = in.mask != nullptr ? in.mask[j * in.mask_stride] : 0;
    scores[j] = in.scale * dot + mask;
    max = std::max(max, scores[j]);
  }
  if (max == -INFINITY) {
    const bool zero = in.zero_masked_rows || in.kv_len == 0;
    return std::vector<double>(in.head_dim, zero ? 0.0 : NAN);
  }
  std::vector<double> out(in.head_dim, 0.0);
  double sum = 0;
  for (int64_t j = 0; j < in.kv_len; ++j) {
    if (scores[j] == -INFINITY) continue;
    const double weight = std::exp(scores[j] - max);
    sum += weight;
    for (int64_t d = 0; d < in.head_dim; ++d) {
      out[d] += weight * in.v[j * in.v_row_stride + d];
    }
  }
  for (double& x : out) x /= sum;
  return out;
}

// AttentionRowReference over tiles of tile_k against DirectAttentionRow.
void ExpectAttentionRowMatches(const AttentionRowInput& in, int64_t tile_k,
                               const std::string& what) {
  std::vector<float> got(in.head_dim);
  AttentionRowReference(in, tile_k, got.data());
  const std::vector<double> want = DirectAttentionRow(in);
  for (int64_t d = 0; d < in.head_dim; ++d) {
    EXPECT_NEAR(got[d], want[d], 5e-5 * (1 + std::fabs(want[d])))
        << what << " tile " << tile_k << " d " << d;
  }
}

TEST(CudaMathTest, AttentionOnlineSoftmaxMatchesTwoPass) {
  std::mt19937 rng(27);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::bernoulli_distribution masked(0.3);
  enum MaskKind { kNone, kValues, kBroadcast, kSomeMinusInf };
  for (int64_t head_dim : {1, 5, 64}) {
    for (int64_t kv_len : {1, 7, 64, 100, 257}) {
      for (MaskKind kind : {kNone, kValues, kBroadcast, kSomeMinusInf}) {
        AttentionRowData row = RandomAttentionRow(kv_len, head_dim, rng);
        if (kind == kBroadcast) row.mask = {value(rng)};
        if (kind == kValues || kind == kSomeMinusInf) {
          row.mask.resize(kv_len);
          for (float& x : row.mask) x = value(rng);
        }
        if (kind == kSomeMinusInf) {
          for (float& x : row.mask) {
            if (masked(rng)) x = -INFINITY;
          }
          row.mask[kv_len / 2] = 0.0f;  // one key stays visible
        }
        for (float scale : {0.125f, 4.0f}) {
          for (int64_t tile : {1, 3, 16, 64, 1000}) {
            ExpectAttentionRowMatches(row.Input(scale, false), tile,
                                      "head_dim " + std::to_string(head_dim) +
                                          " kv_len " + std::to_string(kv_len) +
                                          " mask " + std::to_string(kind) +
                                          " scale " + std::to_string(scale));
          }
        }
      }
    }
  }
}

// Padding-aware work: the rule for the keys a row visits, and the row
// computed over those keys only equal to the row over all of them (the
// direct computation visits every key) for the exporters' padding values.
TEST(CudaMathTest, AttentionSkipsPaddedKeysExactly) {
  constexpr float kLowest = -3.4028235e38f;  // torch.finfo(float32).min
  const std::vector<float> padded = {0.5f, -1.0f, 0.0f, kLowest, -INFINITY};
  EXPECT_EQ(RowKeyEnd(padded.data(), 1, 5), 3);
  EXPECT_EQ(RowKeyEnd(padded.data(), 1, 3), 3);
  const std::vector<float> old_bert = {0.0f, -10000.0f};  // not skipped
  EXPECT_EQ(RowKeyEnd(old_bert.data(), 1, 2), 2);
  const std::vector<float> nan = {0.0f, NAN, kLowest};  // NaN is visited
  EXPECT_EQ(RowKeyEnd(nan.data(), 1, 3), 2);
  const std::vector<float> all = {kLowest, kLowest, -INFINITY};
  EXPECT_EQ(RowKeyEnd(all.data(), 1, 3), 3);  // nothing to skip by
  EXPECT_EQ(RowKeyEnd(all.data(), 0, 3), 3);  // a broadcast value
  std::mt19937 rng(31);
  for (int64_t length : {1, 9, 40, 64}) {
    for (float pad : {kLowest, -INFINITY}) {
      AttentionRowData row = RandomAttentionRow(64, 16, rng);
      row.mask.assign(64, 0.0f);
      for (int64_t j = length; j < 64; ++j) row.mask[j] = pad;
      for (int64_t tile : {1, 16, 64}) {
        ExpectAttentionRowMatches(row.Input(4.0f, false), tile,
                                  "length " + std::to_string(length));
      }
    }
  }
  // Every key masked by the finite lowest: uniform weights over all keys.
  AttentionRowData row = RandomAttentionRow(10, 4, rng);
  row.mask.assign(10, kLowest);
  ExpectAttentionRowMatches(row.Input(1.0f, false), 4, "all masked");
}

TEST(CudaMathTest, AttentionRescalesWhenTheMaxGrows) {
  // Scores given by the mask alone (scale 0): rising, the max grows with
  // every tile (each rescales what came before by exp(-3 * tile) or less);
  // falling, it never does.
  std::mt19937 rng(5);
  AttentionRowData row = RandomAttentionRow(40, 8, rng);
  row.mask.resize(40);
  for (int j = 0; j < 40; ++j) row.mask[j] = 0.75f * j;
  for (int64_t tile : {1, 4, 7, 40}) {
    ExpectAttentionRowMatches(row.Input(0.0f, false), tile, "rising");
  }
  std::reverse(row.mask.begin(), row.mask.end());
  for (int64_t tile : {1, 4, 7, 40}) {
    ExpectAttentionRowMatches(row.Input(0.0f, false), tile, "falling");
  }
}

TEST(CudaMathTest, AttentionFullyMaskedRowGivesZeroOrNan) {
  std::mt19937 rng(3);
  AttentionRowData row = RandomAttentionRow(33, 16, rng);
  row.mask = {-INFINITY};  // broadcast: every score is -inf
  for (int64_t tile : {1, 16, 1000}) {
    std::vector<float> out(16, 7.0f);
    AttentionRowReference(row.Input(0.5f, true), tile, out.data());
    for (float x : out) EXPECT_EQ(x, 0.0f) << "tile " << tile;
    AttentionRowReference(row.Input(0.5f, false), tile, out.data());
    for (float x : out) {
      EXPECT_EQ(std::bit_cast<uint32_t>(x), 0x7fc00000u) << "tile " << tile;
    }
  }
  EXPECT_EQ(AttentionOutputValue(0.0f, 0.0f, true), 0.0f);
  EXPECT_TRUE(std::isnan(AttentionOutputValue(0.0f, 0.0f, false)));
  EXPECT_EQ(AttentionOutputValue(3.0f, 4.0f, false), 0.75f);
}

TEST(CudaMathTest, AttentionMaskedFirstTilesThenVisibleKeys) {
  // Tiles of 4: the first two hold only -inf scores (the max stays -inf
  // and must not turn into NaN), the later ones are visible.
  std::mt19937 rng(11);
  AttentionRowData row = RandomAttentionRow(20, 6, rng);
  row.mask.assign(20, 0.0f);
  for (int j = 0; j < 8; ++j) row.mask[j] = -INFINITY;
  for (bool zero : {false, true}) {
    std::vector<float> out(6);
    AttentionRowReference(row.Input(1.0f, zero), 4, out.data());
    for (float x : out) EXPECT_TRUE(std::isfinite(x));
    for (int64_t tile : {1, 3, 4, 5, 8, 20}) {
      ExpectAttentionRowMatches(row.Input(1.0f, zero), tile, "first masked");
    }
  }
  // Only the last key visible: out is its value row exactly.
  row.mask.assign(20, -INFINITY);
  row.mask[19] = 2.0f;
  std::vector<float> out(6);
  AttentionRowReference(row.Input(1.0f, false), 4, out.data());
  for (int d = 0; d < 6; ++d) EXPECT_EQ(out[d], row.v[19 * 9 + d]);
}

TEST(CudaMathTest, AttentionNanScoreMakesTheRowNan) {
  std::mt19937 rng(13);
  AttentionRowData row = RandomAttentionRow(10, 4, rng);
  row.k[3 * 7 + 1] = NAN;  // key 3's score
  for (bool zero : {false, true}) {
    for (int64_t tile : {1, 4, 10}) {
      std::vector<float> out(4);
      AttentionRowReference(row.Input(1.0f, zero), tile, out.data());
      for (float x : out) EXPECT_TRUE(std::isnan(x)) << "tile " << tile;
    }
  }
}

TEST(CudaMathTest, AttentionWithoutKeysGivesZero) {
  std::mt19937 rng(17);
  const AttentionRowData row = RandomAttentionRow(0, 4, rng);
  for (bool zero : {false, true}) {
    std::vector<float> out(4, 7.0f);
    AttentionRowReference(row.Input(1.0f, zero), 16, out.data());
    for (float x : out) EXPECT_EQ(x, 0.0f);
  }
}

TEST(CudaMathTest, AttentionRescaleAvoidsMinusInfinityMinusMinusInfinity) {
  const float inf = INFINITY;
  TileRescale step = RescaleForTile(-inf, -inf);  // nothing visible yet
  EXPECT_EQ(step.max, -inf);
  EXPECT_EQ(step.factor, 1.0f);
  EXPECT_EQ(ScoreWeight(-inf, step.max), 0.0f);
  step = RescaleForTile(-inf, 2.0f);  // the first visible tile
  EXPECT_EQ(step.max, 2.0f);
  EXPECT_EQ(step.factor, 0.0f);
  step = RescaleForTile(1.0f, 3.0f);  // the max grows
  EXPECT_EQ(step.max, 3.0f);
  EXPECT_EQ(step.factor, std::exp(-2.0f));
  step = RescaleForTile(3.0f, -inf);  // a fully masked tile later on
  EXPECT_EQ(step.max, 3.0f);
  EXPECT_EQ(step.factor, 1.0f);
  EXPECT_EQ(ScoreWeight(-inf, 3.0f), 0.0f);
  EXPECT_EQ(ScoreWeight(3.0f, 3.0f), 1.0f);
  EXPECT_EQ(MaxScore(1.0f, NAN), 1.0f);
  RunningSoftmax row = EmptyMaxSum();
  row = AddTile(row, RescaleForTile(row.max, -inf), 0.0f);
  EXPECT_EQ(row.sum, 0.0f);
  row = AddTile(row, RescaleForTile(row.max, 0.0f), 2.5f);
  EXPECT_EQ(row.max, 0.0f);
  EXPECT_EQ(row.sum, 2.5f);
  row = AddTile(row, RescaleForTile(row.max, std::log(2.0f)), 1.0f);
  EXPECT_NEAR(row.sum, 2.5f / 2 + 1, 1e-6);
}

TEST(CudaMathTest, AttentionTilingFitsSharedMemoryAndWmma) {
  EXPECT_EQ(AttentionPaddedHeadDim(0), 0);
  EXPECT_EQ(AttentionPaddedHeadDim(1), 32);
  EXPECT_EQ(AttentionPaddedHeadDim(32), 32);
  EXPECT_EQ(AttentionPaddedHeadDim(33), 64);
  EXPECT_EQ(AttentionPaddedHeadDim(80), 128);
  EXPECT_EQ(AttentionPaddedHeadDim(200), 256);
  EXPECT_EQ(AttentionPaddedHeadDim(256), 256);
  EXPECT_EQ(AttentionPaddedHeadDim(257), 0);
  for (bool half : {false, true}) {
    for (int head_dim : {32, 64, 128, 256}) {
      const AttentionTiling t = MakeAttentionTiling(half, head_dim);
      const std::string what =
          (half ? "float16 " : "float32 ") + std::to_string(head_dim);
      EXPECT_LE(t.bytes, 99 * 1024) << what;  // sm_86's largest block
      EXPECT_EQ(t.rows_q, kAttentionWarpRows * t.warps) << what;
      EXPECT_EQ(t.rows_k % 16, 0) << what;
      EXPECT_GE(t.ld_q, head_dim) << what;
      EXPECT_GE(t.ld_v, head_dim) << what;
      EXPECT_GE(t.ld_s, t.rows_k) << what;
      EXPECT_GE(t.ld_o, head_dim) << what;
      const int element = half ? 2 : 4;
      const int ends[] = {t.q_offset + t.rows_q * t.ld_q * element,
                          t.k_offset + t.rows_k * t.ld_k * element,
                          t.v_offset + t.rows_k * t.ld_v * element,
                          t.s_offset + t.rows_q * t.ld_s * 4,
                          t.o_offset + t.rows_q * t.ld_o * 4,
                          t.scale_offset + t.rows_q * 4,
                          t.sum_offset + t.rows_q * 4};
      const int starts[] = {t.q_offset,   t.k_offset, t.v_offset,
                            t.s_offset,   t.o_offset, t.scale_offset,
                            t.sum_offset, t.bytes};
      for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(starts[i] % 128, 0) << what << " region " << i;
        EXPECT_LE(ends[i], starts[i + 1]) << what << " region " << i;
      }
      if (half) {  // wmma: leading dims of 16 bytes, 16-row steps on 32
        EXPECT_EQ(t.ld_q % 8, 0) << what;
        EXPECT_EQ(t.ld_k % 8, 0) << what;
        EXPECT_EQ(t.ld_v % 8, 0) << what;
        EXPECT_EQ(t.ld_s % 4, 0) << what;
        EXPECT_EQ(t.ld_o % 4, 0) << what;
      } else {  // the FMA loops' lane layout: 8 column groups
        EXPECT_EQ(t.rows_k % 8, 0) << what;
      }
    }
  }
}

TEST(CudaMathTest, AttentionBlocksCoverEveryTileHeadAndBatch) {
  const int64_t q_tiles = 3, heads = 5, batch = 2;
  std::vector<int> seen(q_tiles * heads * batch, 0);
  for (int64_t block = 0; block < q_tiles * heads * batch; ++block) {
    const AttentionBlock at = DecodeAttentionBlock(block, q_tiles, heads);
    ASSERT_LT(at.q_tile, q_tiles);
    ASSERT_LT(at.head, heads);
    ASSERT_LT(at.batch, batch);
    EXPECT_EQ(at.q_tile, block % q_tiles);  // the query tile fastest
    ++seen[(at.batch * heads + at.head) * q_tiles + at.q_tile];
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// A sequence's packed rows by the 32-way search: a [2, 8] batch's real
// rows 1, 2 (entry 0) and 8, 9, 10 (entry 1), one filler repeating the
// first.
TEST(CudaMathTest, PackedRowsAreFoundBy32WaySearch) {
  const SerialBallot ballot;
  const int64_t pack[] = {1, 2, 8, 9, 10, 1};
  EXPECT_EQ(SearchPackedRow(pack, 6, 16, 16, ballot), 5);  // the real rows
  EXPECT_EQ(SearchPackedRow(pack, 5, 16, 16, ballot), 5);  // no filler
  EXPECT_EQ(SearchPackedRow(pack, 3, 16, 16, ballot), 3);
  EXPECT_EQ(SearchPackedRow(pack, 6, 10, 10, ballot), 4);  // 10: out of range
  EXPECT_EQ(SearchPackedRow(pack, 6, 16, 0, ballot), 0);   // entry 0's first
  EXPECT_EQ(SearchPackedRow(pack, 6, 16, 8, ballot), 2);   // entry 1's first
  EXPECT_EQ(SearchPackedRow(pack, 6, 16, 16, ballot), 5);  // entry 1's end
  // No real row: row 0 packed as a filler counts as one, of entry 0.
  const int64_t none[] = {0, 0, 0};
  EXPECT_EQ(SearchPackedRow(none, 3, 6, 6, ballot), 1);
  EXPECT_EQ(SearchPackedRow(none, 3, 6, 3, ballot), 1);
  EXPECT_EQ(SearchPackedRow(none, 0, 6, 3, ballot), 0);
}

// Every answer the search can give, over ranges that take one to three
// rounds: rows of flat indices 0, 2, 4, ... (all real), the first at or
// past 2 * answer.
TEST(CudaMathTest, TheSearchFindsTheFirstRowAtOrPast) {
  const SerialBallot ballot;
  for (int64_t rows : {1, 2, 31, 32, 33, 64, 100, 1023, 1024, 1025, 5000}) {
    std::vector<int64_t> pack(rows);
    for (int64_t r = 0; r < rows; ++r) pack[r] = 2 * r;
    std::vector<int64_t> answers;
    for (int64_t a = 0; a < rows; a += a < 70 ? 1 : rows / 37 + 1)
      answers.push_back(a);
    answers.push_back(rows);  // none at or past: every row searched
    for (int64_t answer : answers) {
      EXPECT_EQ(
          SearchPackedRow(pack.data(), rows, 2 * rows, 2 * answer, ballot),
          answer)
          << rows << " rows";
      if (answer > 0) {  // between two rows' indices: the later row
        EXPECT_EQ(SearchPackedRow(pack.data(), rows, 2 * rows, 2 * answer - 1,
                                  ballot),
                  answer)
            << rows << " rows";
      }
    }
  }
}

TEST(CudaMathTest, AttentionVectorLoadsNeedAlignedRows) {
  // [2, 4, 10, 64] float16, contiguous, from a 256-byte aligned address.
  const int64_t strides[3] = {4 * 10 * 64, 10 * 64, 64};
  const int64_t extents[3] = {2, 4, 10};
  EXPECT_TRUE(CanLoadRowsAsVectors(0x1000, 2, strides, extents, 64));
  EXPECT_FALSE(CanLoadRowsAsVectors(0x1008, 2, strides, extents, 64));
  EXPECT_FALSE(CanLoadRowsAsVectors(0x1000, 2, strides, extents, 60));
  EXPECT_TRUE(CanLoadRowsAsVectors(0x1000, 4, strides, extents, 60));
  // Packed QKV rows (3 * heads * 64 apart) stay aligned; an odd row stride
  // does not, unless there is one row.
  const int64_t packed[3] = {10 * 3 * 4 * 64, 64, 3 * 4 * 64};
  EXPECT_TRUE(
      CanLoadRowsAsVectors(0x1000 + 2 * 4 * 64 * 2, 2, packed, extents, 64));
  const int64_t odd[3] = {4 * 10 * 100, 10 * 100, 100 + 1};
  EXPECT_FALSE(CanLoadRowsAsVectors(0x1000, 2, odd, extents, 64));
  const int64_t one_row[3] = {2, 4, 1};
  EXPECT_TRUE(CanLoadRowsAsVectors(0x1000, 2, odd, one_row, 64));
}

}  // namespace
}  // namespace coalesce::kernels::cuda
