#include "engine/node_profile.h"

#include <algorithm>

namespace coalesce {

void NodeProfile::Reset() {
  std::fill(nanos_.begin(), nanos_.end(), 0);
  std::fill(runs_.begin(), runs_.end(), 0);
  std::fill(fused_attention_.begin(), fused_attention_.end(), false);
}

bool NodeProfile::ran() const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [](int64_t runs) { return runs != 0; });
}

}  // namespace coalesce
