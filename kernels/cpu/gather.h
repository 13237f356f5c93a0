// Gather along one axis for any element type (sizes in bytes), with int64 or
// int32 indices that may be negative (counted from the end of the axis).
// Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_GATHER_H_
#define COALESCE_KERNELS_CPU_GATHER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace coalesce::kernels {

// Views `src` as [outer, axis_dim, inner_bytes] and writes
// out[o, i, :] = src[o, indices[i] (+ axis_dim if negative), :] for
// i < num_indices. InvalidArgument (out partly written) when an index is
// outside [-axis_dim, axis_dim).
// REQUIRES: out holds outer * num_indices * inner_bytes bytes.
absl::Status Gather(const void* src, int64_t outer, int64_t axis_dim,
                    size_t inner_bytes, const int64_t* indices,
                    int64_t num_indices, void* out);
absl::Status Gather(const void* src, int64_t outer, int64_t axis_dim,
                    size_t inner_bytes, const int32_t* indices,
                    int64_t num_indices, void* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_GATHER_H_
