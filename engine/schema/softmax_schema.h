// Softmax and LogSoftmax. Opset < 13: the input is coerced to 2-D at `axis`
// (default 1) and each row is normalized (`legacy`). Opset >= 13: normalized
// along `axis` (default -1). FP32.
#ifndef COALESCE_ENGINE_SCHEMA_SOFTMAX_SCHEMA_H_
#define COALESCE_ENGINE_SCHEMA_SOFTMAX_SCHEMA_H_

#include <cstdint>

namespace coalesce {

struct SoftmaxAttrs {
  int64_t axis = -1;    // as written; normalized against each input's rank
  bool legacy = false;  // opset < 13: rows of the 2-D coercion at axis
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_SCHEMA_SOFTMAX_SCHEMA_H_
