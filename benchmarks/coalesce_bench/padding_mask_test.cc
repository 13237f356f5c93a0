#include "benchmarks/coalesce_bench/padding_mask.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

using ::testing::HasSubstr;

std::string MessageOf(const absl::Status& s) {
  return std::string(s.message());
}

// Bytes from a list of byte values, for expectations written out by hand.
std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// A lengths file in the test's temporary directory; returns its path.
std::string WriteLengths(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

PaddingMaskFlag Flag(const std::string& text) {
  auto flag = ParsePaddingMaskFlag(text);
  EXPECT_TRUE(flag.ok()) << flag.status();
  return flag.ok() ? *flag : PaddingMaskFlag{};
}

void ExpectFlagError(const std::string& text, const std::string& needle) {
  auto flag = ParsePaddingMaskFlag(text);
  ASSERT_FALSE(flag.ok()) << text << " parsed";
  EXPECT_EQ(flag.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(flag.status()), HasSubstr("--padding-mask")) << text;
  EXPECT_THAT(MessageOf(flag.status()), HasSubstr(needle)) << text;
}

void ExpectCreateError(const PaddingMaskFlag& flag,
                       const std::vector<TensorSpec>& inputs,
                       const std::string& needle) {
  auto generator = PaddingMaskGenerator::Create(flag, inputs, 1);
  ASSERT_FALSE(generator.ok()) << needle;
  EXPECT_EQ(generator.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(MessageOf(generator.status()), HasSubstr("--padding-mask"));
  EXPECT_THAT(MessageOf(generator.status()), HasSubstr(needle));
}

TEST(PaddingMaskFlagTest, Uniform) {
  PaddingMaskFlag a = Flag("attention_mask=uniform:8");
  EXPECT_EQ(a.input, "attention_mask");
  EXPECT_EQ(a.kind, PaddingMaskFlag::Kind::kUniform);
  EXPECT_EQ(a.min, 8);
  EXPECT_EQ(a.max, 0);  // S
  EXPECT_EQ(a.text, "attention_mask=uniform:8");
  PaddingMaskFlag b = Flag("m=uniform:2:5");
  EXPECT_EQ(b.min, 2);
  EXPECT_EQ(b.max, 5);
  EXPECT_EQ(Flag("m=uniform:3:3").max, 3);
}

TEST(PaddingMaskFlagTest, FileIsReadInOrder) {
  const std::string path =
      WriteLengths("mask_lengths_ok", "12\n 3 \r\n\n7\n");  // blanks, CRLF
  PaddingMaskFlag flag = Flag("ids=file:" + path);
  EXPECT_EQ(flag.kind, PaddingMaskFlag::Kind::kFile);
  EXPECT_EQ(flag.path, path);
  EXPECT_EQ(flag.lengths, (std::vector<int64_t>{12, 3, 7}));
}

TEST(PaddingMaskFlagTest, BadValues) {
  ExpectFlagError("attention_mask", "NAME=DIST");
  ExpectFlagError("=uniform:3", "NAME=DIST");
  ExpectFlagError("m=", "NAME=DIST");
  ExpectFlagError("m=uniform", "uniform:MIN");
  ExpectFlagError("m=uniform:", "positive integer");
  ExpectFlagError("m=uniform:0", "positive integer");
  ExpectFlagError("m=uniform:-2", "positive integer");
  ExpectFlagError("m=uniform:x", "positive integer");
  ExpectFlagError("m=uniform:5:3", "MIN <= MAX");
  ExpectFlagError("m=uniform:1:2:3", "uniform:MIN:MAX");
  ExpectFlagError("m=normal:3", "uniform:MIN, uniform:MIN:MAX or file:PATH");
  ExpectFlagError("m=file:", "file:PATH");
  ExpectFlagError("m=file:/nonexistent/lengths", "cannot read");
  ExpectFlagError("m=file:" + WriteLengths("mask_lengths_empty", ""),
                  "holds no lengths");
  ExpectFlagError("m=file:" + WriteLengths("mask_lengths_blank", "\n \n"),
                  "holds no lengths");
  ExpectFlagError("m=file:" + WriteLengths("mask_lengths_bad", "4\n5x\n"),
                  "line 2 needs a positive integer, got '5x'");
  ExpectFlagError("m=file:" + WriteLengths("mask_lengths_zero", "4\n0\n"),
                  "got '0'");
}

TEST(PaddingMaskBytesTest, OneAndZeroInEveryDatatype) {
  // Two rows of S=3, lengths 2 and 0.
  EXPECT_EQ(*PaddingMaskBytes("INT32", 3, {2, 0}),
            Bytes({1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,  //
                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(*PaddingMaskBytes("UINT8", 3, {2, 0}), Bytes({1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(*PaddingMaskBytes("FP16", 3, {1}), Bytes({0x00, 0x3c, 0, 0, 0, 0}));
  EXPECT_EQ(*PaddingMaskBytes("BF16", 3, {1}), Bytes({0x80, 0x3f, 0, 0, 0, 0}));
  EXPECT_EQ(*PaddingMaskBytes("FP64", 2, {1}),
            Bytes({0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(PaddingMaskBytes("BYTES", 3, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// uniform:1 over S=4 with seed 8: std::mt19937_64(8) starts
// 8930828567890437529, 16926849584203755386, 15906981515588336024, and
// L = 1 + x mod 4 (x mod 4 from the last two digits: 29, 86, 24) gives
// lengths 2, 3, 1 for the three rows of a [3,4] mask.
TEST(PaddingMaskGeneratorTest, Int64BytesWithAFixedSeed) {
  auto g = PaddingMaskGenerator::Create(Flag("mask=uniform:1"),
                                        {{"mask", "INT64", {3, 4}}}, 8);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->rows(), 3);
  EXPECT_EQ(g->seq_len(), 4);
  const std::string one = Bytes({1, 0, 0, 0, 0, 0, 0, 0});
  const std::string zero(8, '\0');
  EXPECT_EQ(g->Next(), one + one + zero + zero +       // L = 2
                           one + one + one + zero +    // L = 3
                           one + zero + zero + zero);  // L = 1
  EXPECT_DOUBLE_EQ(g->mean_fill(), 6.0 / 12.0);
}

TEST(PaddingMaskGeneratorTest, Fp32BytesWithAFixedSeed) {
  auto g = PaddingMaskGenerator::Create(Flag("mask=uniform:1"),
                                        {{"mask", "FP32", {3, 4}}}, 8);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string one = Bytes({0x00, 0x00, 0x80, 0x3f});  // 1.0f
  const std::string zero(4, '\0');
  EXPECT_EQ(g->Next(), one + one + zero + zero +     //
                           one + one + one + zero +  //
                           one + zero + zero + zero);
}

TEST(PaddingMaskGeneratorTest, BoolBytesWithAFixedSeed) {
  auto g = PaddingMaskGenerator::Create(Flag("mask=uniform:1"),
                                        {{"mask", "BOOL", {3, 4}}}, 8);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->Next(), Bytes({1, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0}));
}

TEST(PaddingMaskGeneratorTest, UniformStaysInItsRangeAndCoversIt) {
  auto g = PaddingMaskGenerator::Create(
      Flag("m=uniform:3:6"), {{"x", "FP32", {1, 2}}, {"m", "BOOL", {1, 8}}}, 5);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->input_index(), 1);
  EXPECT_EQ(g->min_length(), 3);
  EXPECT_EQ(g->max_length(), 6);
  std::vector<int> seen(9, 0);
  for (int i = 0; i < 400; ++i) {
    const std::string mask = g->Next();
    ASSERT_EQ(mask.size(), 8u);
    const int length = static_cast<int>(mask.find('\0'));
    ASSERT_NE(length, static_cast<int>(std::string::npos)) << "L = S = 8";
    for (int j = length; j < 8; ++j) ASSERT_EQ(mask[j], 0);
    ++seen[length];
  }
  EXPECT_EQ(seen[0] + seen[1] + seen[2] + seen[7] + seen[8], 0);
  for (int l = 3; l <= 6; ++l) EXPECT_GT(seen[l], 50) << l;
  EXPECT_GT(g->mean_fill(), 0.5);  // about 4.5 / 8
  EXPECT_LT(g->mean_fill(), 0.625);
}

TEST(PaddingMaskGeneratorTest, UniformMinRunsUpToS) {
  auto g = PaddingMaskGenerator::Create(Flag("m=uniform:4"),
                                        {{"m", "INT64", {4}}}, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->rows(), 1);
  EXPECT_EQ(g->max_length(), 4);
  EXPECT_EQ(g->Next(), std::string(Bytes({1, 0, 0, 0, 0, 0, 0, 0})) +
                           Bytes({1, 0, 0, 0, 0, 0, 0, 0}) +
                           Bytes({1, 0, 0, 0, 0, 0, 0, 0}) +
                           Bytes({1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(PaddingMaskGeneratorTest, FileLengthsAreUsedInOrderAndCycled) {
  const std::string path = WriteLengths("mask_lengths_cycle", "3\n1\n4\n");
  // Two rows per request (batch 2); every leading index is a row.
  auto g = PaddingMaskGenerator::Create(Flag("m=file:" + path),
                                        {{"m", "UINT8", {2, 4}}}, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->min_length(), 1);
  EXPECT_EQ(g->max_length(), 4);
  EXPECT_EQ(g->Next(), Bytes({1, 1, 1, 0, 1, 0, 0, 0}));  // 3, 1
  EXPECT_EQ(g->Next(), Bytes({1, 1, 1, 1, 1, 1, 1, 0}));  // 4, 3
  EXPECT_EQ(g->Next(), Bytes({1, 0, 0, 0, 1, 1, 1, 1}));  // 1, 4
  EXPECT_EQ(g->Next(), Bytes({1, 1, 1, 0, 1, 0, 0, 0}));  // 3, 1 again
  // 3+1+4+3+1+4+3+1 = 20 over 8 rows, over S = 4.
  EXPECT_DOUBLE_EQ(g->mean_fill(), 20.0 / 8.0 / 4.0);
}

TEST(PaddingMaskGeneratorTest, EveryLeadingIndexIsARow) {
  const std::string path = WriteLengths("mask_lengths_rows", "1\n2\n");
  auto g = PaddingMaskGenerator::Create(Flag("m=file:" + path),
                                        {{"m", "BOOL", {1, 2, 2}}}, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->rows(), 2);
  EXPECT_EQ(g->seq_len(), 2);
  EXPECT_EQ(g->Next(), Bytes({1, 0, 1, 1}));
}

TEST(PaddingMaskGeneratorTest, ErrorsAgainstTheModel) {
  const std::vector<TensorSpec> inputs = {{"input_ids", "INT64", {1, 16}},
                                          {"attention_mask", "INT64", {1, 16}},
                                          {"text", "BYTES", {1, 16}},
                                          {"scalar", "INT32", {}}};
  ExpectCreateError(Flag("mask=uniform:1"), inputs,
                    "names 'mask', which is not an input of the model "
                    "(inputs: input_ids, attention_mask, text, scalar)");
  ExpectCreateError(Flag("text=uniform:1"), inputs, "has datatype BYTES");
  ExpectCreateError(Flag("scalar=uniform:1"), inputs, "is a scalar");
  ExpectCreateError(Flag("attention_mask=uniform:17"), inputs,
                    "uniform MIN 17 exceeds the sequence length S=16");
  ExpectCreateError(Flag("attention_mask=uniform:2:17"), inputs,
                    "uniform MAX 17 exceeds the sequence length S=16");
  const std::string path = WriteLengths("mask_lengths_long", "16\n4\n17\n");
  ExpectCreateError(Flag("attention_mask=file:" + path), inputs,
                    "length 17 (entry 3) exceeds the sequence length S=16 of "
                    "input 'attention_mask'");
  EXPECT_TRUE(
      PaddingMaskGenerator::Create(Flag("attention_mask=uniform:16"), inputs, 1)
          .ok());
}

}  // namespace
}  // namespace coalesce::bench
