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

// Number of elements of a concrete shape (1 for a scalar). nullopt when a
// dimension is negative or the product overflows int64.
std::optional<int64_t> ElementCount(const Shape& shape);

// "[2,3,-1]"
std::string ShapeToString(const Shape& shape);

// True when `concrete` matches `pattern` dimension by dimension, where a -1 in
// `pattern` matches any non-negative size.
bool ShapeMatches(const Shape& pattern, const Shape& concrete);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SHAPE_H_
