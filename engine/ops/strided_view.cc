#include "engine/ops/strided_view.h"

#include "engine/string_ref.h"
#include "kernels/cpu/strided_copy.h"

namespace coalesce {

void CopyViews(const ConstTensorView& in, absl::Span<const StridedView> views,
               absl::Span<const TensorView> out) {
  const int64_t element = static_cast<int64_t>(StorageByteSize(in.dtype));
  for (size_t o = 0; o < out.size(); ++o) {
    if (out[o].data == nullptr) continue;
    const StridedView& v = views[o];
    kernels::StridedCopy(in.data + v.offset * element, v.dims, v.strides,
                         element, out[o].data);
  }
}

}  // namespace coalesce
