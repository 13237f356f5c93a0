// JSON string literals for the tools' hand-written JSON output.
#ifndef COALESCE_TOOLS_JSON_STRING_H_
#define COALESCE_TOOLS_JSON_STRING_H_

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace coalesce::tools {

// `s` quoted, with quotes, backslashes and control bytes escaped.
inline std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace coalesce::tools

#endif  // COALESCE_TOOLS_JSON_STRING_H_
