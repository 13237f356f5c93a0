#include "kernels/cpu/cast.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/half.h"

namespace coalesce::kernels {
namespace {

template <typename T>
constexpr bool kIsHalf =
    std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename To, typename From>
To Convert(From v) {
  if constexpr (kIsHalf<From>) {
    return Convert<To>(ToFloat(v));
  } else if constexpr (std::is_same_v<To, Float16>) {
    return ToFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return ToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};
  } else if constexpr (std::is_floating_point_v<From> &&
                       std::is_integral_v<To>) {
    // Keep the conversion defined for NaN and out-of-range values.
    if (std::isnan(v)) return To{0};
    if (v >= static_cast<From>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    if (v <= static_cast<From>(std::numeric_limits<To>::min()))
      return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
void CastLoop(const void* src, int64_t count, void* dst) {
  To* out = static_cast<To*>(dst);
  if constexpr (std::is_same_v<From, bool>) {
    // Read bytes, so that a nonzero byte other than 1 reads as true.
    const uint8_t* in = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < count; ++i)
      out[i] = Convert<To>(static_cast<uint8_t>(in[i] != 0));
  } else {
    const From* in = static_cast<const From*>(src);
    for (int64_t i = 0; i < count; ++i) out[i] = Convert<To>(in[i]);
  }
}

// Calls fn(T{}) with the C++ type of `type`.
template <typename Fn>
void Visit(CastType type, Fn&& fn) {
  switch (type) {
    case CastType::kFloat32:
      return fn(float{});
    case CastType::kInt64:
      return fn(int64_t{});
    case CastType::kInt32:
      return fn(int32_t{});
    case CastType::kBool:
      return fn(bool{});
    case CastType::kInt8:
      return fn(int8_t{});
    case CastType::kUint8:
      return fn(uint8_t{});
    case CastType::kInt16:
      return fn(int16_t{});
    case CastType::kUint16:
      return fn(uint16_t{});
    case CastType::kUint32:
      return fn(uint32_t{});
    case CastType::kUint64:
      return fn(uint64_t{});
    case CastType::kFloat64:
      return fn(double{});
    case CastType::kFloat16:
      return fn(Float16{});
    case CastType::kBFloat16:
      return fn(BFloat16{});
  }
}

}  // namespace

size_t CastTypeByteSize(CastType type) {
  size_t size = 0;
  Visit(type, [&](auto tag) { size = sizeof(tag); });
  return size;
}

void Cast(CastType from, const void* src, CastType to, int64_t count,
          void* dst) {
  if (from == to && from != CastType::kBool) {
    if (src != dst && count > 0)
      std::memcpy(dst, src, count * CastTypeByteSize(from));
    return;
  }
  Visit(from, [&](auto from_tag) {
    Visit(to, [&](auto to_tag) {
      CastLoop<decltype(from_tag), decltype(to_tag)>(src, count, dst);
    });
  });
}

}  // namespace coalesce::kernels
