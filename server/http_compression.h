// HTTP content codings (RFC 9110 section 8.4) through zlib: "gzip" and
// "deflate" (the zlib format, as RFC 9110 defines it; a raw deflate stream,
// which some clients send, is accepted too). Used by the HTTP server to undo
// a request's Content-Encoding and to apply the coding a client asks for in
// Accept-Encoding. Pure functions; thread-safe.
#ifndef COALESCE_SERVER_HTTP_COMPRESSION_H_
#define COALESCE_SERVER_HTTP_COMPRESSION_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace coalesce {

enum class ContentCoding { kIdentity, kGzip, kDeflate };

// The coding a Content-Encoding value names ("identity" or empty: none).
// InvalidArgument (Unimplemented for a well-formed coding we lack, such as
// "br") for anything else; several codings in one header are refused.
absl::StatusOr<ContentCoding> ParseContentEncoding(std::string_view value);

// The coding to answer with for an Accept-Encoding value: gzip when the
// client accepts it (q > 0, by name or "*"), else deflate, else identity.
ContentCoding ChooseResponseCoding(std::string_view accept_encoding);

std::string_view ContentCodingName(ContentCoding coding);

// `data` decoded. InvalidArgument when it is not valid for the coding or
// decodes to more than `max_bytes` (the check a zip bomb meets).
absl::StatusOr<std::string> Decompress(ContentCoding coding,
                                       std::string_view data, size_t max_bytes);

// `data` encoded with `coding` (identity: unchanged).
std::string Compress(ContentCoding coding, std::string_view data);

}  // namespace coalesce

#endif  // COALESCE_SERVER_HTTP_COMPRESSION_H_
