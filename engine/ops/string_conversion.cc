#include "engine/ops/string_conversion.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/ops/numeric_types.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

using kernels::BFloat16;
using kernels::Float16;

template <typename T>
constexpr bool kIsHalf =
    std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Room for any number's text: the shortest double is at most 24 characters.
constexpr size_t kMaxText = 48;

template <typename T>
std::string_view Format(T v, char (&buf)[kMaxText]) {
  if constexpr (kIsHalf<T>) {
    return Format(kernels::ToFloat(v), buf);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
    }
    const std::to_chars_result r = std::to_chars(buf, buf + kMaxText, v);
    return std::string_view(buf, r.ptr - buf);
  }
}

// A value out of range for a float type, from syntax already checked:
// strtod gives the infinity or the (sub)normal/zero it rounds to.
template <typename T>
T OutOfRangeFloat(std::string_view s) {
  const std::string copy(s);
  if constexpr (std::is_same_v<T, float>) {
    return std::strtof(copy.c_str(), nullptr);
  } else {
    return std::strtod(copy.c_str(), nullptr);
  }
}

// Parses all of `s` as T; false when it is not exactly one number in range.
template <typename T>
bool Parse(std::string_view s, T* out) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+')
    s.remove_prefix(1);
  if constexpr (kIsHalf<T>) {
    float f;
    if (!Parse(s, &f)) return false;
    *out = std::is_same_v<T, Float16> ? T{kernels::FloatToHalfBits(f)}
                                      : T{kernels::FloatToBf16Bits(f)};
    return true;
  } else if constexpr (std::is_same_v<T, bool>) {
    const absl::string_view word(s.data(), s.size());
    if (absl::EqualsIgnoreCase(word, "true") ||
        absl::EqualsIgnoreCase(word, "false")) {
      *out = absl::EqualsIgnoreCase(word, "true");
      return true;
    }
    double d;
    if (!Parse(s, &d)) return false;
    *out = d != 0;
    return true;
  } else {
    const char* end = s.data() + s.size();
    const std::from_chars_result r = std::from_chars(s.data(), end, *out);
    if (r.ptr != end || s.empty()) return false;
    if constexpr (std::is_floating_point_v<T>) {
      if (r.ec == std::errc::result_out_of_range) {
        *out = OutOfRangeFloat<T>(s);
        return true;
      }
    }
    return r.ec == std::errc();
  }
}

absl::Status ParseError(std::string_view s, DataType to) {
  constexpr size_t kQuoted = 64;
  const bool cut = s.size() > kQuoted;
  const std::string text(s.substr(0, kQuoted));
  return absl::InvalidArgumentError(
      absl::StrCat("cannot parse \"", absl::CHexEscape(text), cut ? "..." : "",
                   "\" as ", std::string(DataTypeName(to))));
}

}  // namespace

absl::Status NumbersToStrings(DataType from, const void* src, int64_t count,
                              StringStore& store, StringRef* out) {
  return VisitNumericType(from, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(src);
    char buf[kMaxText];
    for (int64_t i = 0; i < count; ++i) {
      absl::StatusOr<StringRef> s = store.Add(Format(in[i], buf));
      if (!s.ok()) return s.status();
      out[i] = *s;
    }
    return absl::OkStatus();
  });
}

absl::Status StringsToNumbers(const StringRef* src, int64_t count, DataType to,
                              void* dst) {
  return VisitNumericType(to, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    T* out = static_cast<T*>(dst);
    for (int64_t i = 0; i < count; ++i) {
      if (!Parse(src[i].view(), &out[i])) return ParseError(src[i].view(), to);
    }
    return absl::OkStatus();
  });
}

}  // namespace coalesce
