#include "engine/node_profile.h"

#include <algorithm>

namespace coalesce {

void NodeProfile::Reset() {
  std::fill(nanos_.begin(), nanos_.end(), 0);
  std::fill(runs_.begin(), runs_.end(), 0);
}

}  // namespace coalesce
