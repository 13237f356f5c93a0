// LayerNormalization (opset 17): normalizes X over dimensions [axis, rank)
// (axis default -1; epsilon default 1e-5), then applies Scale and the
// optional bias B, which must have the normalized shape (leading 1s allowed)
// or one element. FP32. Only output 0 (Y): a node that names Mean or
// InvStdDev is refused when the model loads.
#ifndef COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_

#include <cstdint>

namespace coalesce {

struct LayerNormAttrs {
  int64_t axis = -1;  // as written; normalized against X's rank
  float epsilon = 1e-5f;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_
