// Comparison and selection with multidirectional (NumPy-style) broadcasting:
// Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor (bool
// output), Not, Where, and the float classifications IsNaN and IsInf. Bools
// are one byte, 0 or 1. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_COMPARE_H_
#define COALESCE_KERNELS_CPU_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

// kAnd, kOr and kXor are the logical operators, for T = bool.
enum class CompareOp {
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor
};

// out[i] = a[i'] op b[i''] over out_dims, the broadcast of a_dims and b_dims.
// Defined for T = float, double, Float16, BFloat16 (kernels/cpu/half.h;
// compared as floats), int8_t ... int64_t, uint8_t ... uint64_t and bool.
// REQUIRES: out_dims is that broadcast; out holds its element count.
template <typename T>
void BroadcastCompare(CompareOp op, const T* a,
                      const std::vector<int64_t>& a_dims, const T* b,
                      const std::vector<int64_t>& b_dims,
                      const std::vector<int64_t>& out_dims, bool* out);

// Whether two elements (each `element_bytes` long) are equal.
using ElementEqualFn = bool (*)(const void* a, const void* b);

// out[i] = equal(a[i'], b[i'']) over out_dims, the broadcast of a_dims and
// b_dims, for elements of any type (the engine's strings).
// REQUIRES: out_dims is that broadcast; out holds its element count.
void BroadcastEqualBy(const void* a, const std::vector<int64_t>& a_dims,
                      const void* b, const std::vector<int64_t>& b_dims,
                      const std::vector<int64_t>& out_dims,
                      size_t element_bytes, ElementEqualFn equal, bool* out);

// out[i] = !in[i].
void LogicalNot(const bool* in, int64_t count, bool* out);

// out[i] = cond[i'] ? x[i''] : y[i'''] over out_dims, the broadcast of the
// three shapes; x, y and out hold elements of `element_bytes`.
void BroadcastWhere(const bool* cond, const std::vector<int64_t>& cond_dims,
                    const void* x, const std::vector<int64_t>& x_dims,
                    const void* y, const std::vector<int64_t>& y_dims,
                    const std::vector<int64_t>& out_dims, size_t element_bytes,
                    void* out);

// out[i] = isnan(in[i]); for T = float, double, Float16, BFloat16.
template <typename T>
void IsNaN(const T* in, int64_t count, bool* out);

// out[i] = in[i] is +inf (when detect_positive) or -inf (when
// detect_negative); for T = float, double, Float16, BFloat16.
template <typename T>
void IsInf(const T* in, int64_t count, bool detect_positive,
           bool detect_negative, bool* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_COMPARE_H_
