#include "engine/cuda/sdpa_layout.h"

#include <cstdint>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

// BERT's fused QKV as the device plan leaves it: one [B, S, 3E] product,
// q, k and v its thirds, heads split by strides; the output merged back to
// [B, S, E]. Batch 2, 12 heads, sequence 128, head dimension 64.
constexpr int64_t kB = 2, kH = 12, kS = 128, kD = 64, kE = kH * kD;

const Half kHalfArray[1] = {};  // 16-byte alignment is Run's check, not ours

AttentionArgs BertArgs() {
  AttentionArgs a;
  a.batch = kB;
  a.heads = kH;
  a.q_len = kS;
  a.kv_len = kS;
  a.head_dim = kD;
  a.q = FloatIn(kHalfArray);
  a.k = FloatIn(kHalfArray);
  a.v = FloatIn(kHalfArray);
  a.out = FloatOut(const_cast<Half*>(kHalfArray));
  a.q_strides = a.k_strides = a.v_strides = {kS * 3 * kE, kD, 3 * kE, 1};
  a.out_strides = {kS * kE, kD, kE, 1};
  a.scale = 0.125f;
  return a;
}

const float kFloatArray[1] = {};

TEST(SdpaLayoutTest, TakesStridedHeadsAsTheyAre) {
  auto l = SdpaLayoutOf(BertArgs());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->type, DeviceFloat::kHalf);
  EXPECT_EQ(l->q.dims, (std::array<int64_t, 4>{kB, kH, kS, kD}));
  EXPECT_EQ(l->k.strides, (std::array<int64_t, 4>{kS * 3 * kE, kD, 3 * kE, 1}));
  EXPECT_EQ(l->out.strides, (std::array<int64_t, 4>{kS * kE, kD, kE, 1}));
  EXPECT_FALSE(l->has_bias);
}

// Hugging Face's key padding mask, [B, 1, 1, S] broadcast over heads and
// queries, in float32: converted, compact [B, 1, 1, S].
TEST(SdpaLayoutTest, ConvertsABroadcastFloatMaskCompactly) {
  AttentionArgs a = BertArgs();
  a.mask = FloatIn(kFloatArray);
  a.mask_strides = {kS, 0, 0, 1};
  auto l = SdpaLayoutOf(a);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->has_bias);
  EXPECT_TRUE(l->convert_bias);
  EXPECT_EQ(l->bias.dims, (std::array<int64_t, 4>{kB, 1, 1, kS}));
  // The axes of one take the array's extent as their stride.
  EXPECT_EQ(l->bias.strides, (std::array<int64_t, 4>{kS, kB * kS, kB * kS, 1}));
  EXPECT_EQ(l->bias_elements, kB * kS);
}

// cuDNN reads the bias as 16-byte rows and does not check: a converted
// mask over 70 keys (rows of 140 bytes) is refused.
TEST(SdpaLayoutTest, RefusesAMaskOfUnalignedRows) {
  AttentionArgs a = BertArgs();
  a.kv_len = 70;
  a.mask = FloatIn(kFloatArray);
  a.mask_strides = {70, 0, 0, 1};
  EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  a.mask = FloatIn(kHalfArray);  // in place, the same rows
  EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
}

// The TorchScript export's expanded mask, [B, 1, S, S] materialized.
TEST(SdpaLayoutTest, ConvertsAFullFloatMask) {
  AttentionArgs a = BertArgs();
  a.mask = FloatIn(kFloatArray);
  a.mask_strides = {kS * kS, 0, kS, 1};
  auto l = SdpaLayoutOf(a);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->bias.dims, (std::array<int64_t, 4>{kB, 1, kS, kS}));
  EXPECT_EQ(l->bias_elements, kB * kS * kS);
}

// A float32 mask whose axes are not row-major cannot be converted as one
// run: a transposed [B, 1, S, S] view.
TEST(SdpaLayoutTest, RefusesAFloatMaskNotCompact) {
  AttentionArgs a = BertArgs();
  a.mask = FloatIn(kFloatArray);
  a.mask_strides = {kS * kS, 0, kS + 8, 1};  // rows further apart
  EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  a.mask_strides = {2 * kS, 0, 0, 1};  // every other row of a larger array
  EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
}

// A mask of q's type is read in place: its strides, dims of 1 where it
// broadcasts.
TEST(SdpaLayoutTest, ReadsAHalfMaskInPlace) {
  AttentionArgs a = BertArgs();
  a.mask = FloatIn(kHalfArray);
  a.mask_strides = {2 * kS, 0, 0, 1};
  auto l = SdpaLayoutOf(a);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->convert_bias);
  EXPECT_EQ(l->bias.dims, (std::array<int64_t, 4>{kB, 1, 1, kS}));
  EXPECT_EQ(l->bias.strides[0], 2 * kS);
  EXPECT_EQ(l->bias.strides[3], 1);
}

TEST(SdpaLayoutTest, RefusesWhatCudnnDoesNotTake) {
  {
    AttentionArgs a = BertArgs();  // float32 attention
    a.q = FloatIn(kFloatArray);
    a.k = FloatIn(kFloatArray);
    a.v = FloatIn(kFloatArray);
    a.out = FloatOut(const_cast<float*>(kFloatArray));
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  {
    AttentionArgs a = BertArgs();  // float16 q, bfloat16 out
    a.out = FloatOut(const_cast<Half*>(kHalfArray), DeviceFloat::kBFloat16);
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  for (int64_t head_dim : {60, 136}) {
    AttentionArgs a = BertArgs();
    a.head_dim = head_dim;
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status())) << head_dim;
  }
  {
    AttentionArgs a = BertArgs();
    a.zero_masked_rows = true;
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  {
    AttentionArgs a = BertArgs();  // rows of 3 * 768 + 4: not 16-byte rows
    a.q_strides[2] = 3 * kE + 4;
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  {
    AttentionArgs a = BertArgs();  // a mask strided along the keys
    a.mask = FloatIn(kFloatArray);
    a.mask_strides = {kS, 0, 0, 2};
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  {
    AttentionArgs a = BertArgs();  // packed rows
    const int64_t pack[1] = {0};
    a.pack = pack;
    a.packed_rows = 1;
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
  {
    AttentionArgs a = BertArgs();  // a bfloat16 mask with float16 q
    a.mask = FloatIn(kHalfArray, DeviceFloat::kBFloat16);
    a.mask_strides = {kS, 0, 0, 1};
    EXPECT_TRUE(absl::IsUnimplemented(SdpaLayoutOf(a).status()));
  }
}

// A stride of an axis of one does not matter (batch 1): it becomes the
// tensor's extent, a multiple of 8.
TEST(SdpaLayoutTest, ReplacesStridesOfSingleAxes) {
  AttentionArgs a = BertArgs();
  a.batch = 1;
  a.q_strides[0] = a.k_strides[0] = a.v_strides[0] = a.out_strides[0] = 3;
  auto l = SdpaLayoutOf(a);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->q.strides[0], kS * 3 * kE);
  EXPECT_EQ(l->out.strides[0], kS * kE);
  EXPECT_EQ(l->q.strides[2], 3 * kE);
}

TEST(SdpaLayoutTest, KeysTellGraphsApart) {
  AttentionArgs a = BertArgs();
  const std::string base = SdpaKey(*SdpaLayoutOf(a), a.scale);
  EXPECT_EQ(SdpaKey(*SdpaLayoutOf(a), a.scale), base);
  EXPECT_NE(SdpaKey(*SdpaLayoutOf(a), 0.25f), base);
  AttentionArgs longer = a;
  longer.kv_len = 2 * kS;
  EXPECT_NE(SdpaKey(*SdpaLayoutOf(longer), a.scale), base);
  AttentionArgs bf16 = a;
  bf16.q.type = bf16.k.type = bf16.v.type = bf16.out.type =
      DeviceFloat::kBFloat16;
  EXPECT_NE(SdpaKey(*SdpaLayoutOf(bf16), a.scale), base);
  AttentionArgs masked = a;
  masked.mask = FloatIn(kFloatArray);
  masked.mask_strides = {kS, 0, 0, 1};
  const std::string with_mask = SdpaKey(*SdpaLayoutOf(masked), a.scale);
  EXPECT_NE(with_mask, base);
  masked.mask = FloatIn(kHalfArray);
  EXPECT_NE(SdpaKey(*SdpaLayoutOf(masked), a.scale), with_mask);
}

}  // namespace
}  // namespace coalesce
