#include "engine/shape.h"

#include <limits>

namespace coalesce {

std::optional<int64_t> ElementCount(const Shape& shape) {
  int64_t nonzero = 1;  // <= kMaxShapeProduct, so the product cannot overflow
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (d > kMaxShapeProduct / nonzero) return std::nullopt;
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

std::string ShapeToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

bool ShapeMatches(const Shape& pattern, const Shape& concrete) {
  if (pattern.size() != concrete.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (concrete[i] < 0) return false;
    if (pattern[i] != -1 && pattern[i] != concrete[i]) return false;
  }
  return true;
}

}  // namespace coalesce
