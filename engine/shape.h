// Shape: the dimensions of a tensor, outermost first. A dimension of -1 means
// "variable" where a shape describes a signature; concrete tensors have none.
#ifndef COALESCE_ENGINE_SHAPE_H_
#define COALESCE_ENGINE_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

using Shape = std::vector<int64_t>;

// The most elements ElementCount accepts, zero dims left out (2^40: no
// tensor that large can be held, kMaxTensorBytes in string_ref.h).
inline constexpr int64_t kMaxShapeProduct = int64_t{1} << 40;

// Number of elements of a concrete shape (1 for a scalar). nullopt when a
// dimension is negative or the product of the non-zero dimensions exceeds
// kMaxShapeProduct. Zero dims are left out of that bound on purpose: an
// empty tensor [0, 2^62] would otherwise let a later operator multiply
// 2^62 by its attributes, so every product of an accepted shape's dims
// stays far from int64 overflow.
std::optional<int64_t> ElementCount(const Shape& shape);

// "[2,3,-1]"
std::string ShapeToString(const Shape& shape);

// True when `concrete` matches `pattern` dimension by dimension, where a -1 in
// `pattern` matches any non-negative size.
bool ShapeMatches(const Shape& pattern, const Shape& concrete);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SHAPE_H_
