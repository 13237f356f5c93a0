// Copy helpers: plain copies and Concat along an axis, for any element type
// (sizes in bytes). Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_COPY_H_
#define COALESCE_KERNELS_CPU_COPY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

// memcpy that tolerates n == 0 with null pointers and src == dst.
void CopyBytes(const void* src, size_t n, void* dst);

// Concatenates inputs viewed as [outer, chunk_bytes[i]] along the second
// dimension: out row r = input0 row r ++ input1 row r ++ ...
// REQUIRES: inputs.size() == chunk_bytes.size(); out holds
// outer * sum(chunk_bytes) bytes and overlaps no input.
void Concat(const std::vector<const void*>& inputs,
            const std::vector<size_t>& chunk_bytes, int64_t outer, void* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_COPY_H_
