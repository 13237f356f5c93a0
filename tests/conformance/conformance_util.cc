#include "tests/conformance/conformance_util.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace coalesce::conformance {
namespace {

double HalfToDouble(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 0x1f) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

// Element `i` of `t` as a double.
double ElementAsDouble(const HostTensor& t, size_t i) {
  auto at = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    return v;
  };
  switch (t.dtype) {
    case DataType::kFp32:
      return at(float{});
    case DataType::kFp64:
      return at(double{});
    case DataType::kInt64:
      return static_cast<double>(at(int64_t{}));
    case DataType::kUint64:
      return static_cast<double>(at(uint64_t{}));
    case DataType::kInt32:
      return at(int32_t{});
    case DataType::kUint32:
      return at(uint32_t{});
    case DataType::kInt16:
      return at(int16_t{});
    case DataType::kUint16:
      return at(uint16_t{});
    case DataType::kInt8:
      return at(int8_t{});
    case DataType::kUint8:
    case DataType::kBool:
      return at(uint8_t{});
    case DataType::kFp16:
      return HalfToDouble(at(uint16_t{}));
    case DataType::kBf16:
      return std::bit_cast<float>(static_cast<uint32_t>(at(uint16_t{})) << 16);
    case DataType::kBytes:
    case DataType::kInvalid:
      return NAN;
  }
  return NAN;
}

bool Close(double expected, double actual, const Tolerance& tol) {
  if (std::isnan(expected) || std::isnan(actual))
    return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(actual - expected) <=
         tol.atol + tol.rtol * std::fabs(expected);
}

// Reads "<open>VALUE<close>" starting at `pos`; advances `pos` past it.
bool ReadQuoted(absl::string_view text, absl::string_view open,
                absl::string_view close, size_t& pos, std::string& value) {
  if (text.substr(pos, open.size()) != open) return false;
  const size_t begin = pos + open.size();
  const size_t end = text.find(close, begin);
  if (end == absl::string_view::npos) return false;
  value = std::string(text.substr(begin, end - begin));
  pos = end + close.size();
  return true;
}

void AddUnique(std::vector<std::string>& list, std::string value) {
  for (const std::string& v : list)
    if (v == value) return;
  list.push_back(std::move(value));
}

}  // namespace

absl::Status AllClose(const HostTensor& expected, const HostTensor& actual,
                      const Tolerance& tolerance) {
  if (expected.dtype != actual.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", std::string(DataTypeName(actual.dtype)),
                     ", expected ", std::string(DataTypeName(expected.dtype))));
  }
  if (expected.shape != actual.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(actual.shape), ", expected ",
                     ShapeToString(expected.shape)));
  }
  const size_t count =
      static_cast<size_t>(ElementCount(expected.shape).value_or(0));
  if (expected.bytes.size() != actual.bytes.size() ||
      actual.bytes.size() != count * ElementByteSize(actual.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        actual.bytes.size(), " bytes, expected ", expected.bytes.size()));
  }
  size_t mismatches = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < count; ++i) {
    const double e = ElementAsDouble(expected, i),
                 a = ElementAsDouble(actual, i);
    if (Close(e, a, tolerance)) continue;
    ++mismatches;
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(e);
    const double excess =
        std::isfinite(a - e) ? std::fabs(a - e) - allowed : INFINITY;
    if (excess > worst_excess || mismatches == 1)
      worst = i, worst_excess = excess;
  }
  if (mismatches == 0) return absl::OkStatus();
  const double e = ElementAsDouble(expected, worst),
               a = ElementAsDouble(actual, worst);
  return absl::InvalidArgumentError(absl::StrCat(
      mismatches, " of ", count, " elements differ (rtol ", tolerance.rtol,
      ", atol ", tolerance.atol, "); worst at flat index ", worst, ": got ", a,
      ", expected ", e, ", |diff| ", std::fabs(a - e)));
}

UnsupportedReason ParseLoadError(const absl::Status& status) {
  UnsupportedReason reason;
  const absl::string_view message = status.message();
  constexpr absl::string_view kOps = "unsupported operators: ";
  if (size_t pos = message.find(kOps); pos != absl::string_view::npos) {
    while ((pos = message.find("(op '", pos)) != absl::string_view::npos) {
      std::string op, domain;
      if (!ReadQuoted(message, "(op '", "')", pos, op)) break;
      if (ReadQuoted(message, " in domain '", "'", pos, domain))
        op = absl::StrCat(domain, "/", op);
      AddUnique(reason.ops, std::move(op));
    }
  }
  constexpr absl::string_view kType = "unsupported element type ";
  if (size_t pos = message.find(kType); pos != absl::string_view::npos) {
    const size_t begin = pos + kType.size();
    const size_t end = message.find_first_of(" ,;", begin);
    AddUnique(reason.datatypes,
              absl::StrCat("datatype ", message.substr(begin, end - begin)));
  }
  if (absl::StrContains(message, "' is not a tensor"))
    AddUnique(reason.datatypes, "non-tensor value (sequence, map or optional)");
  return reason;
}

}  // namespace coalesce::conformance
