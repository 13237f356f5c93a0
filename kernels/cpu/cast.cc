#include "kernels/cpu/cast.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace coalesce::kernels {
namespace {

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
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
  const From* in = static_cast<const From*>(src);
  To* out = static_cast<To*>(dst);
  for (int64_t i = 0; i < count; ++i) out[i] = Convert<To>(in[i]);
}

// bool arrives as bytes so that a nonzero byte other than 1 reads as true.
template <typename To>
void CastFromBool(const void* src, int64_t count, void* dst) {
  const uint8_t* in = static_cast<const uint8_t*>(src);
  To* out = static_cast<To*>(dst);
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<To>(in[i] != 0);
}

template <typename From>
void CastFrom(const void* src, CastType to, int64_t count, void* dst) {
  switch (to) {
    case CastType::kFloat32:
      return CastLoop<From, float>(src, count, dst);
    case CastType::kInt64:
      return CastLoop<From, int64_t>(src, count, dst);
    case CastType::kInt32:
      return CastLoop<From, int32_t>(src, count, dst);
    case CastType::kBool:
      return CastLoop<From, bool>(src, count, dst);
  }
}

}  // namespace

void Cast(CastType from, const void* src, CastType to, int64_t count,
          void* dst) {
  switch (from) {
    case CastType::kFloat32:
      return CastFrom<float>(src, to, count, dst);
    case CastType::kInt64:
      return CastFrom<int64_t>(src, to, count, dst);
    case CastType::kInt32:
      return CastFrom<int32_t>(src, to, count, dst);
    case CastType::kBool:
      switch (to) {
        case CastType::kFloat32:
          return CastFromBool<float>(src, count, dst);
        case CastType::kInt64:
          return CastFromBool<int64_t>(src, count, dst);
        case CastType::kInt32:
          return CastFromBool<int32_t>(src, count, dst);
        case CastType::kBool:
          return CastFromBool<bool>(src, count, dst);
      }
  }
}

}  // namespace coalesce::kernels
