// TensorSpec: the name, element type and shape of one model input or output.
// Dims may contain -1 for a variable (symbolic) dimension. A plain value type.
#ifndef COALESCE_ENGINE_TENSOR_SPEC_H_
#define COALESCE_ENGINE_TENSOR_SPEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/data_type.h"
#include "engine/shape.h"

namespace coalesce {

struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape dims;
};

// The spec named `name` in `specs`, or null. The pointer lives as long as
// `specs` is not changed.
inline const TensorSpec* FindTensorSpec(const std::vector<TensorSpec>& specs,
                                        std::string_view name) {
  for (const TensorSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// What a model takes and returns, in the model's own order.
struct ModelSignature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_TENSOR_SPEC_H_
