// Helpers shared by the kernels built on oneDNN's primitive API (conv.cc).
// Internal to kernels/cpu; the rest of the engine never sees oneDNN types.
#ifndef COALESCE_KERNELS_CPU_DNNL_UTIL_H_
#define COALESCE_KERNELS_CPU_DNNL_UTIL_H_

#include <cstddef>
#include <initializer_list>
#include <utility>

#include "absl/status/statusor.h"
#include "kernels/cpu/fused_activation.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace coalesce::kernels {

// The process-wide oneDNN CPU engine. Thread-safe.
const dnnl::engine& CpuEngine();

// The plain row-major layout tag for `rank` dims (a, ab, abc, ... abcdef).
dnnl::memory::format_tag PlainTag(size_t rank);

// The channels-last tag for an activation of `rank` dims given to oneDNN as
// [N, C, spatial...] but stored as [N, spatial..., C]: acb, acdb or acdeb.
// REQUIRES: 3 <= rank <= 5.
dnnl::memory::format_tag ChannelsLastTag(size_t rank);

// A memory object for `desc` with no buffer yet; bind with set_data_handle.
dnnl::memory UnboundMemory(const dnnl::memory::desc& desc);

// oneDNN post-ops that apply `act` (none for kNone); with `sum_first`, a sum
// post-op before it adds what dst held before the primitive ran.
dnnl::post_ops PostOpsFor(const FusedActivation& act, bool sum_first = false);

// Runs `prim` with (arg, memory) pairs (at most 8) through the C API, which
// takes an array and allocates nothing; the C++ execute() builds an
// unordered_map per call. Internal if oneDNN fails.
absl::Status ExecutePrimitive(
    const dnnl::primitive& prim, const dnnl::stream& stream,
    std::initializer_list<std::pair<int, const dnnl::memory*>> args);

// A new library-owned memory in `layout` holding `from`'s contents.
absl::StatusOr<dnnl::memory> ReorderToNew(const dnnl::memory& from,
                                          const dnnl::memory::desc& layout);

// Offsets of 64-byte aligned blocks packed one after the other.
class ScratchLayout {
 public:
  // Reserves `bytes` and returns the block's offset.
  size_t Add(size_t bytes);
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_DNNL_UTIL_H_
