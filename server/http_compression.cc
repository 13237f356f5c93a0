#include "server/http_compression.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coalesce {
namespace {

// zlib's windowBits for each format.
constexpr int kZlibWindow = 15;
constexpr int kGzipWindow = 15 + 16;
constexpr int kRawWindow = -15;
constexpr size_t kChunk = 64 * 1024;

// Inflates `data` in the format `window` selects. InvalidArgument for a
// corrupt or truncated stream, or output past `max_bytes`.
absl::StatusOr<std::string> Inflate(std::string_view data, int window,
                                    size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, window) != Z_OK) {
    return absl::InternalError("zlib cannot start inflating");
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    const size_t at = out.size();
    out.resize(at + kChunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    z.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(at + kChunk - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return absl::InvalidArgumentError(absl::StrCat(
          "the request body decompresses to more than ", max_bytes, " bytes"));
    }
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) {
      inflateEnd(&z);
      return absl::InvalidArgumentError(
          "the request body is not valid for its Content-Encoding (corrupt or "
          "truncated)");
    }
  }
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (trailing) {
    return absl::InvalidArgumentError(
        "the request body has bytes after its compressed stream");
  }
  return out;
}

std::string Deflate(std::string_view data, int window) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window, 8,
               Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);  // the bound makes one call enough
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// An Accept-Encoding entry's q value (1 when absent, 0 when malformed).
double QualityOf(absl::string_view params) {
  for (absl::string_view p : absl::StrSplit(params, ';')) {
    p = absl::StripAsciiWhitespace(p);
    if (absl::ConsumePrefix(&p, "q=")) {
      char* end = nullptr;
      const std::string text(p);
      const double q = std::strtod(text.c_str(), &end);
      return end == text.c_str() ? 0 : q;
    }
  }
  return 1;
}

}  // namespace

absl::StatusOr<ContentCoding> ParseContentEncoding(std::string_view text) {
  const absl::string_view value(text.data(), text.size());
  const std::string coding =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  if (coding.empty() || coding == "identity") return ContentCoding::kIdentity;
  if (coding == "gzip" || coding == "x-gzip") return ContentCoding::kGzip;
  if (coding == "deflate") return ContentCoding::kDeflate;
  if (coding.find(',') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Content-Encoding '", value, "': one coding at most is supported"));
  }
  return absl::UnimplementedError(
      absl::StrCat("Content-Encoding '", value,
                   "' is not supported (gzip, deflate or identity)"));
}

ContentCoding ChooseResponseCoding(std::string_view text) {
  const absl::string_view accept_encoding(text.data(), text.size());
  // -1: not named.
  double gzip = -1, deflate = -1, any = -1;
  for (absl::string_view entry : absl::StrSplit(accept_encoding, ',')) {
    const size_t semi = entry.find(';');
    const std::string name = absl::AsciiStrToLower(
        absl::StripAsciiWhitespace(entry.substr(0, semi)));
    const double q =
        semi == absl::string_view::npos ? 1 : QualityOf(entry.substr(semi + 1));
    if (name == "gzip" || name == "x-gzip") gzip = std::max(gzip, q);
    if (name == "deflate") deflate = std::max(deflate, q);
    if (name == "*") any = std::max(any, q);
  }
  if (gzip < 0) gzip = any;
  if (deflate < 0) deflate = any;
  if (gzip > 0) return ContentCoding::kGzip;
  if (deflate > 0) return ContentCoding::kDeflate;
  return ContentCoding::kIdentity;
}

std::string_view ContentCodingName(ContentCoding coding) {
  switch (coding) {
    case ContentCoding::kGzip:
      return "gzip";
    case ContentCoding::kDeflate:
      return "deflate";
    case ContentCoding::kIdentity:
      break;
  }
  return "identity";
}

absl::StatusOr<std::string> Decompress(ContentCoding coding,
                                       std::string_view data,
                                       size_t max_bytes) {
  switch (coding) {
    case ContentCoding::kIdentity:
      return std::string(data);
    case ContentCoding::kGzip:
      return Inflate(data, kGzipWindow, max_bytes);
    case ContentCoding::kDeflate: {
      auto zlib = Inflate(data, kZlibWindow, max_bytes);
      if (zlib.ok() || data.size() < 2) return zlib;
      // Not a zlib stream: perhaps a raw deflate stream.
      const unsigned header = (static_cast<unsigned char>(data[0]) << 8) |
                              static_cast<unsigned char>(data[1]);
      if (header % 31 == 0 && (data[0] & 0x0f) == Z_DEFLATED) return zlib;
      return Inflate(data, kRawWindow, max_bytes);
    }
  }
  return absl::InternalError("unknown content coding");
}

std::string Compress(ContentCoding coding, std::string_view data) {
  switch (coding) {
    case ContentCoding::kGzip:
      return Deflate(data, kGzipWindow);
    case ContentCoding::kDeflate:
      return Deflate(data, kZlibWindow);
    case ContentCoding::kIdentity:
      break;
  }
  return std::string(data);
}

}  // namespace coalesce
