#include "server/http_compression.h"

#include <zlib.h>

#include <string>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

// A body compressed by zlib itself with `window` (the reference, not our
// Compress).
std::string ZlibCompressed(const std::string& data, int window) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Body() {
  std::string body;
  for (int i = 0; i < 5000; ++i)
    body += "{\"data\": [" + std::to_string(i) + "]}";
  return body;
}

TEST(HttpCompressionTest, DecodesWhatZlibWroteInEachFormat) {
  const std::string body = Body();
  EXPECT_EQ(*Decompress(ContentCoding::kGzip, ZlibCompressed(body, 15 + 16),
                        body.size()),
            body);
  EXPECT_EQ(*Decompress(ContentCoding::kDeflate, ZlibCompressed(body, 15),
                        body.size()),
            body);
  // A raw deflate stream, which some clients send for "deflate".
  EXPECT_EQ(*Decompress(ContentCoding::kDeflate, ZlibCompressed(body, -15),
                        body.size()),
            body);
}

TEST(HttpCompressionTest, CompressRoundTripsAndShrinks) {
  const std::string body = Body();
  for (ContentCoding c : {ContentCoding::kGzip, ContentCoding::kDeflate}) {
    const std::string packed = Compress(c, body);
    EXPECT_LT(packed.size(), body.size() / 4);
    EXPECT_EQ(*Decompress(c, packed, body.size()), body);
  }
  EXPECT_EQ(Compress(ContentCoding::kIdentity, body), body);
}

TEST(HttpCompressionTest, RefusesOutputPastTheLimit) {
  const std::string bomb(10 << 20, '\0');
  auto s =
      Decompress(ContentCoding::kGzip, ZlibCompressed(bomb, 15 + 16), 1 << 20);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("more than 1048576 bytes"),
            std::string::npos)
      << s.status();
}

TEST(HttpCompressionTest, RefusesCorruptAndTruncatedStreams) {
  const std::string packed = ZlibCompressed(Body(), 15 + 16);
  EXPECT_FALSE(
      Decompress(ContentCoding::kGzip, "not gzip at all", 1 << 20).ok());
  EXPECT_FALSE(Decompress(ContentCoding::kGzip,
                          packed.substr(0, packed.size() / 2), 1 << 20)
                   .ok());
  EXPECT_FALSE(
      Decompress(ContentCoding::kGzip, packed + "trailing", 1 << 20).ok());
}

TEST(HttpCompressionTest, ParsesContentEncoding) {
  EXPECT_EQ(*ParseContentEncoding(""), ContentCoding::kIdentity);
  EXPECT_EQ(*ParseContentEncoding("identity"), ContentCoding::kIdentity);
  EXPECT_EQ(*ParseContentEncoding(" GZIP "), ContentCoding::kGzip);
  EXPECT_EQ(*ParseContentEncoding("deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(ParseContentEncoding("br").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ParseContentEncoding("gzip, deflate").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpCompressionTest, ChoosesTheCodingTheClientAccepts) {
  EXPECT_EQ(ChooseResponseCoding(""), ContentCoding::kIdentity);
  EXPECT_EQ(ChooseResponseCoding("gzip"), ContentCoding::kGzip);
  EXPECT_EQ(ChooseResponseCoding("deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(ChooseResponseCoding("gzip, deflate"), ContentCoding::kGzip);
  EXPECT_EQ(ChooseResponseCoding("gzip;q=0, deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(ChooseResponseCoding("*"), ContentCoding::kGzip);
  EXPECT_EQ(ChooseResponseCoding("gzip;q=0, *"), ContentCoding::kDeflate);
  EXPECT_EQ(ChooseResponseCoding("br, identity"), ContentCoding::kIdentity);
}

}  // namespace
}  // namespace coalesce
