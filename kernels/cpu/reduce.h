// Reductions of a float tensor over any set of axes: the ONNX ReduceX family
// (Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp).
// Sums accumulate in double along contiguous rows. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_REDUCE_H_
#define COALESCE_KERNELS_CPU_REDUCE_H_

#include <cstdint>
#include <vector>

namespace coalesce::kernels {

enum class ReduceOp {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,         // sum |x|
  kL2,         // sqrt(sum x^2)
  kSumSquare,  // sum x^2
  kLogSum,     // log(sum x)
  kLogSumExp,  // log(sum exp(x)), exp taken in double
};

// Reduces `in` (shape `dims`, row-major) over the dimensions whose `reduce`
// flag is set. `out` holds the kept dimensions in order (a reduced dimension
// counts as 1). Over an empty set of elements, kSum, kL1, kL2 and kSumSquare
// give 0, kProd 1, kMean NaN, kMax -inf, kMin +inf, kLogSum and kLogSumExp
// -inf. kMax and kMin propagate NaN. REQUIRES: reduce.size() == dims.size();
// `out` overlaps not `in`.
void Reduce(ReduceOp op, const float* in, const std::vector<int64_t>& dims,
            const std::vector<bool>& reduce, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_REDUCE_H_
