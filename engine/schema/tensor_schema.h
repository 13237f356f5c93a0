// Tensor rearrangements whose meaning lives here (engine/schema/
// op_schema.h), any element type:
//   Transpose (`perm`, default: the axes reversed);
//   Concat (`axis`, required): inputs of one type, equal but on the axis;
//   Gather (`axis`, default 0): data's slices along axis at int64 or int32
//   indices, the indices' shape in place of the axis.
#ifndef COALESCE_ENGINE_SCHEMA_TENSOR_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_TENSOR_SCHEMA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce {

struct TransposeAttrs {
  std::vector<int64_t> perm;  // empty: reversed
};

// The permutation for an input of `rank` (the attribute, or reversed).
std::vector<int64_t> TransposePerm(const TransposeAttrs& attrs, size_t rank);

struct ConcatAttrs {
  int64_t axis = 0;
};

struct GatherAttrs {
  int64_t axis = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_TENSOR_SCHEMA_H_
