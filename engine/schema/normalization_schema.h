// The normalization family, FP32:
//   LayerNormalization (opset 17): normalizes X over dimensions [axis, rank)
//   (axis default -1; epsilon default 1e-5), then applies Scale and the
//   optional bias B, which must have the normalized shape (leading 1s
//   allowed) or one element. Only output 0 (Y): a node that names Mean or
//   InvStdDev is refused when the model loads.
//   InstanceNormalization: X [N, C, spatial...] normalized per image and
//   channel, then scale [C] and B [C].
//   GroupNormalization: the C channels in `num_groups` groups normalized
//   per image and group; scale and bias per group at opsets 18 to 20 (as
//   that version of the spec wrote it) and per channel from opset 21.
//   BatchNormalization at inference (opsets 1 to 15): X [N, C, ...] with
//   scale, B, input_mean and input_var [C]; training_mode = 1 and spatial =
//   0 (per-activation statistics) are refused at load, as are the training
//   outputs. The internal int attribute "channels_last" (the optimizer's
//   layout pass) makes X [N, ..., C], and the pass may fuse an activation
//   after it (activation_schema.h).
//   LRN across channels of [N, C, spatial...]: size (required, >= 1),
//   alpha (1e-4), beta (0.75), bias (1).
#ifndef COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_

#include <cstdint>

#include "engine/schema/activation_schema.h"

namespace coalesce {

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool channels_last = false;  // X [N, ..., C]
  FusedActivationAttr activation;
};

struct LrnAttrs {
  int64_t size = 1;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
};

struct LayerNormAttrs {
  int64_t axis = -1;  // as written; normalized against X's rank
  float epsilon = 1e-5f;
};

// InstanceNormalization is the case groups = C (num_groups 0 here).
struct GroupNormAttrs {
  int64_t num_groups = 0;  // 0: one group per channel (InstanceNormalization)
  float epsilon = 1e-5f;
  bool affine_per_group = false;  // GroupNormalization before opset 21
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_NORMALIZATION_SCHEMA_H_
