// Reductions (sum, mean, max) of a float tensor over any set of axes.
// Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_REDUCE_H_
#define COALESCE_KERNELS_CPU_REDUCE_H_

#include <cstdint>
#include <vector>

namespace coalesce::kernels {

enum class ReduceOp { kSum, kMean, kMax };

// Reduces `in` (shape `dims`, row-major) over the dimensions whose `reduce`
// flag is set. `out` holds the kept dimensions in order (a reduced dimension
// counts as 1). Over an empty set of elements, kSum gives 0, kMean NaN and
// kMax -inf. REQUIRES: reduce.size() == dims.size(); `out` overlaps not `in`.
void Reduce(ReduceOp op, const float* in, const std::vector<int64_t>& dims,
            const std::vector<bool>& reduce, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_REDUCE_H_
