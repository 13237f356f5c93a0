// Pad for any element type (sizes in bytes): the Pad function, and PadPlan,
// the same pad prepared once for a set of dims, pads and mode so that each
// run allocates nothing. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_PAD_H_
#define COALESCE_KERNELS_CPU_PAD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce::kernels {

enum class PadMode { kConstant, kReflect, kEdge };

// Writes `src` (dims in_dims) into out (dims in_dims[d] + begin[d] + end[d])
// at offset `begin`, filling the border: kConstant with the element at
// `constant_value`, kEdge with the nearest edge element, kReflect by mirroring
// without repeating the edge. Negative pads crop.
// REQUIRES: every out dim >= 0; for kReflect and kEdge each padded dim is
// non-empty, and for kReflect pads are below the dim (dim 1 repeats the edge).
// Builds a PadPlan on every call.
void Pad(const void* src, const std::vector<int64_t>& in_dims,
         const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
         PadMode mode, const void* constant_value, size_t element_bytes,
         void* out);

// A Pad prepared for one set of dims, pads and mode: the source coordinate of
// every output coordinate along each axis, computed once. Immutable; Run may
// be called from several threads at once and allocates nothing for rank <= 8.
class PadPlan {
 public:
  // REQUIRES: as for Pad.
  PadPlan(const std::vector<int64_t>& in_dims,
          const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
          PadMode mode);

  // As Pad, for the dims, pads and mode the plan was built for.
  void Run(const void* src, const void* constant_value, size_t element_bytes,
           void* out) const;

 private:
  std::vector<int64_t> out_dims_;
  std::vector<int64_t> in_strides_;  // dense, in elements
  // Per axis, the source coordinate of each output coordinate; -1 for the
  // constant border. Empty when the output is.
  std::vector<std::vector<int64_t>> maps_;
  int64_t total_ = 0;  // output elements
  // Along the last axis, output coordinates [interior_begin_, interior_end_)
  // read consecutive source elements: one copy per row.
  int64_t interior_begin_ = 0;
  int64_t interior_end_ = 0;
};

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_PAD_H_
